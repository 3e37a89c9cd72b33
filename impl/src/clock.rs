//! The time a queue stamps on what it writes (D24): milliseconds since the Unix epoch, from a
//! clock the queue is given beside its `Config`. Times are shown, never acted on: no delivery
//! rule reads the clock.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// Where a queue reads the time it records on a park and on a line's death (D24).
///
/// A clock that goes backwards changes only the ages shown: times order nothing.
///
/// # Example
///
/// ```
/// use parkline::{Clock, SystemClock};
/// assert!(SystemClock.now_ms() > 1_700_000_000_000);
/// ```
pub trait Clock: Debug + Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
}

/// The system's wall clock; a time before the epoch reads as 0.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| {
                u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
            })
    }
}

/// The clock a queue uses unless it is given another.
pub(crate) fn system() -> Arc<dyn Clock> {
    Arc::new(SystemClock)
}

/// How long before `now_ms` the time `at` was; 0 for a time ahead of it (a clock that went back
/// changes only the ages shown, D24).
pub(crate) fn age(now_ms: u64, at: u64) -> std::time::Duration {
    std::time::Duration::from_millis(now_ms.saturating_sub(at))
}
