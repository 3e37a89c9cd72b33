//! The ids of delivery as newtypes: requests, seqs, batches, attempts, a mirror's life, and the
//! budget of a batch.

use std::fmt;

use serde::{Deserialize, Serialize};

macro_rules! newtype {
    ($(#[$doc:meta])* $name:ident($inner:ty)) => {
        $(#[$doc])*
        #[derive(
            Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(pub $inner);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }
    };
}

/// The life of a session's mirror (spec/mirror.md M2, M17): a random 64-bit id a mirror gets
/// when it is created (or rewritten from a version before 4), kept by every compaction and
/// written as 16 lowercase hexadecimal digits. An operator request names the life of the
/// mirror its command read, so a session of the same name created after a removal refuses it.
///
/// # Example
///
/// ```
/// use parkline::Life;
/// let life: Life = "00000000000000ff".parse()?;
/// assert_eq!((life, life.to_string()), (Life(255), "00000000000000ff".to_owned()));
/// assert!("ff".parse::<Life>().is_err());
/// # Ok::<(), String>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Life(pub u64);

impl Life {
    /// A fresh life: 64 bits from the standard library's randomly keyed hasher, the process id
    /// and the time, so two mirrors created anywhere almost never share one.
    pub fn fresh() -> Life {
        use std::hash::{BuildHasher, Hasher};
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        hasher.write_u128(now.map_or(0, |d| d.as_nanos()));
        Life(hasher.finish())
    }
}

impl fmt::Display for Life {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl std::str::FromStr for Life {
    type Err = String;
    fn from_str(text: &str) -> Result<Life, String> {
        let hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
        if text.len() != 16 || !text.bytes().all(hex) {
            return Err(format!(
                "a session life is 16 lowercase hexadecimal digits, not {text:?}"
            ));
        }
        u64::from_str_radix(text, 16)
            .map(Life)
            .map_err(|e| e.to_string())
    }
}

impl TryFrom<String> for Life {
    type Error = String;
    fn try_from(text: String) -> Result<Life, String> {
        text.parse()
    }
}

impl From<Life> for String {
    fn from(life: Life) -> String {
        life.to_string()
    }
}

newtype! {
    /// The delegation request a line answers (the daemon's request id).
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(parkline::RequestId(7).to_string(), "7");
    /// ```
    RequestId(u64)
}

newtype! {
    /// Arrival order number assigned by `Queue::park`: strictly increasing,
    /// never reused, the first is 1.
    ///
    /// # Example
    ///
    /// ```
    /// assert!(parkline::Seq(1) < parkline::Seq(2));
    /// ```
    Seq(u64)
}

newtype! {
    /// The id of a batch: assigned at the boundary that persists it, never reused, the first is 1.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(parkline::BatchId(3).to_string(), "3");
    /// ```
    BatchId(u64)
}

newtype! {
    /// How many times a batch has been handed over: 1 the first time, more for a repeat.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(parkline::Attempt(2).to_string(), "2");
    /// ```
    Attempt(u32)
}

newtype! {
    /// The delivery budget: the most characters (Unicode scalar values) of item bodies one batch
    /// may carry, each item costing `line.chars().count() + 1` (D12). It does not count the
    /// turn's header and trailer; a caller whose limit is the whole turn text gets its budget
    /// from [`Budget::for_turn_chars`]. (The read side's `chars_max` is the other kind of limit:
    /// the whole answer, framing included.)
    ///
    /// # Example
    ///
    /// ```
    /// let budget = parkline::Budget(4096);
    /// assert_eq!(budget.0, 4096);
    /// ```
    Budget(usize)
}
