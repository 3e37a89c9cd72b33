//! [`ByRequest`], the seqs the state holds by request, so a retried park finds its line (D3)
//! without a pass over the state.
//!
//! A hash map, not an ordered set: a boundary's settle takes every delivered item out of it, and
//! at 10,000 items the ordered set's removals were half of the settle's CPU (docs/performance.md).
//! Nothing iterates it, so its order cannot reach a record or a reply.

use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap};

use crate::types::{RequestId, Seq};

/// Every `(request, seq)` of the items the state holds (parked, in flight or dead).
#[derive(Clone, Debug, Default)]
pub(crate) struct ByRequest {
    /// The lowest seq of each request held.
    lowest: HashMap<RequestId, Seq>,
    /// The other seqs of a request held more than once: none, unless a file parks a request twice
    /// (a file a build before D3 wrote, or a crafted one, which M3's check accepts).
    more: BTreeSet<(RequestId, Seq)>,
}

impl ByRequest {
    pub(crate) fn with_capacity(items: usize) -> Self {
        ByRequest {
            lowest: HashMap::with_capacity(items),
            more: BTreeSet::new(),
        }
    }

    /// The lowest seq `request` holds, if any.
    pub(crate) fn lowest(&self, request: RequestId) -> Option<Seq> {
        self.lowest.get(&request).copied()
    }

    pub(crate) fn insert(&mut self, request: RequestId, seq: Seq) {
        match self.lowest.entry(request) {
            Entry::Vacant(entry) => {
                entry.insert(seq);
            }
            Entry::Occupied(mut entry) => {
                let held = *entry.get();
                if seq < held {
                    entry.insert(seq);
                    self.more.insert((request, held));
                } else if seq > held {
                    self.more.insert((request, seq));
                }
            }
        }
        debug_assert!(self.lowest(request).is_some_and(|low| low <= seq));
    }

    pub(crate) fn remove(&mut self, request: RequestId, seq: Seq) {
        match self.lowest.entry(request) {
            Entry::Occupied(mut entry) if *entry.get() == seq => {
                let next = self
                    .more
                    .range((request, seq)..=(request, Seq(u64::MAX)))
                    .next();
                match next.copied() {
                    Some(next) => {
                        self.more.remove(&next);
                        entry.insert(next.1);
                    }
                    None => {
                        entry.remove();
                    }
                }
            }
            _ => {
                self.more.remove(&(request, seq));
            }
        }
        debug_assert_ne!(self.lowest(request), Some(seq));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d3_the_lowest_seq_of_a_request_is_found_and_removals_keep_the_rest() {
        let mut index = ByRequest::default();
        let (r, other) = (RequestId(7), RequestId(8));
        assert_eq!(index.lowest(r), None);
        index.insert(r, Seq(5));
        index.insert(other, Seq(6));
        assert_eq!(index.lowest(r), Some(Seq(5)));
        // A file that parks the request twice: the lowest is the one a retried park answers.
        index.insert(r, Seq(9));
        index.insert(r, Seq(3));
        assert_eq!(index.lowest(r), Some(Seq(3)));
        index.remove(r, Seq(3));
        assert_eq!(index.lowest(r), Some(Seq(5)));
        index.remove(r, Seq(5));
        assert_eq!(index.lowest(r), Some(Seq(9)));
        // A seq the request does not hold leaves it as it is.
        index.remove(r, Seq(4));
        assert_eq!(index.lowest(r), Some(Seq(9)));
        index.remove(r, Seq(9));
        assert_eq!(index.lowest(r), None);
        assert_eq!(index.lowest(other), Some(Seq(6)));
    }

    #[test]
    fn d3_inserting_a_held_seq_again_changes_nothing() {
        let mut index = ByRequest::default();
        index.insert(RequestId(1), Seq(2));
        index.insert(RequestId(1), Seq(2));
        index.remove(RequestId(1), Seq(2));
        assert_eq!(index.lowest(RequestId(1)), None);
    }
}
