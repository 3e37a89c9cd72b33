//! The queue's side of operator requests (M17): the request file read, bounded, when its stamp
//! changed, and each request its window does not hold applied as one record.

use std::ops::ControlFlow;

use crate::error::Result;
use crate::io::storage::Storage;
use crate::mirror::Record;
use crate::observe;
use crate::ops::request as ops;

use super::{Queue, Watch};

impl<S: Storage> Queue<S> {
    /// M17: applies the requests of the request file that the window does not hold, each as one
    /// durable record. `at_open` reads the file whatever its stamp; a boundary reads it only when
    /// its stamp changed or the last read is [`ops::REREAD_MS`] old. A file that cannot be read or
    /// parsed is counted and reported, never an error: only a failed write of the mirror is.
    pub(super) fn take_requests(&mut self, at_open: bool) -> Result<()> {
        let name = format!("{}{}", self.name, ops::SUFFIX);
        let now = self.clock.now_ms();
        let stamp = match self.storage.stamp(&name) {
            Ok(Some(stamp)) => stamp,
            Ok(None) => {
                self.requests = Watch::default();
                return Ok(());
            }
            Err(e) => {
                self.requests_unreadable(&name, &e.to_string());
                return Ok(());
            }
        };
        let fresh = now.saturating_sub(self.requests.read_at) <= ops::REREAD_MS;
        if !at_open && self.requests.stamp == Some(stamp) && fresh {
            return Ok(());
        }
        // The stamp before the read: a rewrite after it changes the stamp the next boundary sees.
        self.requests = Watch {
            stamp: Some(stamp),
            read_at: now,
        };
        let entries = match read_request_file(&mut self.storage, &name) {
            Ok(Some(bytes)) => ops::parse(&bytes),
            Ok(None) => return Ok(()),
            Err(why) => Err(why),
        };
        let entries = match entries {
            Ok(entries) => entries,
            Err(why) => {
                self.requests_unreadable(&name, &why);
                return Ok(());
            }
        };
        let named: Vec<&ops::OpId> = entries.iter().filter_map(ops::Entry::id).collect();
        for entry in &entries {
            let known = entry
                .id()
                .is_some_and(|id| ops::applied(&self.core.state.ops, id).is_some());
            if known {
                continue;
            }
            //= spec/mirror.md#m17-operator-requests-to-a-live-session
            //# The holder MUST NOT apply a request that would make the window forget a request
            //# the file still names; it applies the rest once a command has dropped that one.
            let window = &self.core.state.ops;
            if window.len() >= ops::APPLIED_MEMORY
                && window
                    .front()
                    .is_some_and(|oldest| named.contains(&&oldest.id))
            {
                let why = "applying more would make the window forget a request the file still \
                           names; the next command that rewrites the file drops it";
                self.requests_unreadable(&name, why);
                break;
            }
            //= spec/mirror.md#m17-operator-requests-to-a-live-session
            //# It MUST apply a request as one record that both makes the change and names the
            //# request's id, made durable before the next request.
            let Some(record) = self.core.apply_request(entry) else {
                self.requests_unreadable(&name, "a request without a valid id");
                continue;
            };
            self.check_poison()?;
            self.append_or_compact(&record)?;
            self.stats.requests_applied += 1;
            if let Some(applied) = self.core.state.ops.back() {
                observe::request_applied(&self.storage, &self.name, applied);
            }
            self.publish();
        }
        Ok(())
    }

    /// M17: the request file `name` could not be used (or not all of it); counted and reported.
    pub(super) fn requests_unreadable(&mut self, name: &str, reason: &str) {
        //= spec/mirror.md#m17-operator-requests-to-a-live-session
        //# A request file that cannot be read or parsed MUST NOT stop the queue: none of it is
        //# applied and the failure is reported (tracing, `Stats::requests_unreadable`).
        self.stats.requests_unreadable += 1;
        observe::requests_unreadable(&self.storage, name, reason);
        self.publish();
    }

    /// D3: a mirror whose remembered window is not the size the config asks for gets a `next`
    /// record with the new size (the counters as they are), at open: one append and one fsync,
    /// or, since a smaller window shrinks the snapshot, the compaction M12 then makes due.
    pub(super) fn resize_window(&mut self) -> Result<()> {
        let state = &self.core.state;
        let memory = self.core.config.delivered_memory;
        if state.memory == memory {
            return Ok(());
        }
        let record = Record::Next {
            seq: state.next_seq,
            batch: state.next_batch,
            cap: state.cap,
            memory: Some(memory),
        };
        if let Err(e) = self.append_or_compact(&record) {
            return Err(self.not_opened("cannot resize the remembered window", e));
        }
        debug_assert_eq!(self.core.state.memory, memory);
        Ok(())
    }
}

/// M17: the request file `name`, read as input up to
/// [`REQUEST_FILE_BYTES_MAX`](ops::REQUEST_FILE_BYTES_MAX) bytes; `Ok(None)` when there is none,
/// `Err` with the reason when it cannot be read or is longer.
pub(super) fn read_request_file<S: Storage>(
    storage: &mut S,
    name: &str,
) -> std::result::Result<Option<Vec<u8>>, String> {
    let mut bytes = Vec::new();
    let mut longer = false;
    let found = storage
        .read_chunks(name, &mut |piece| {
            if bytes.len() + piece.len() > ops::REQUEST_FILE_BYTES_MAX {
                longer = true;
                return ControlFlow::Break(());
            }
            bytes.extend_from_slice(piece);
            ControlFlow::Continue(())
        })
        .map_err(|e| e.to_string())?;
    if longer {
        return Err(format!(
            "longer than the {} bytes the queue reads of a request file",
            ops::REQUEST_FILE_BYTES_MAX
        ));
    }
    Ok(found.then_some(bytes))
}
