//! [`ByRequest`], the seqs the state holds by request, so a retried park finds its line (D3)
//! without a pass over the state.
//!
//! A hash map, not an ordered set: a boundary's settle takes every delivered item out of it, and
//! at 10,000 items the ordered set's removals were half of the settle's CPU (docs/performance.md).
//! Nothing iterates it, so its order cannot reach a record or a reply.

use std::collections::hash_map::{Entry, RandomState};
use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasher, Hasher};

use crate::types::{RequestId, Seq};

/// Every `(request, seq)` of the items the state holds (parked, in flight or dead).
#[derive(Clone, Debug)]
pub(crate) struct ByRequest {
    /// The lowest seq of each request held.
    lowest: HashMap<RequestId, Seq, Seeded>,
    /// The other seqs of a request held more than once: none, unless a file parks a request twice
    /// (a file a build before D3 wrote, or a crafted one, which M3's check accepts).
    more: BTreeSet<(RequestId, Seq)>,
}

impl ByRequest {
    pub(crate) fn with_capacity(items: usize) -> Self {
        ByRequest {
            lowest: HashMap::with_capacity_and_hasher(items, Seeded::new()),
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

impl Default for ByRequest {
    fn default() -> Self {
        ByRequest::with_capacity(0)
    }
}

/// The index's hasher: a request id is one `u64`, hashed by two folded multiplies (the high and
/// low halves of a 128-bit product xored) of the id and a seed drawn per index. std's SipHash-1-3
/// was most of a 10,000-line settle's index time (callgrind: 3.58 M instructions with it, 2.42 M
/// with one folded multiply); the seed, from std's own random keys, keeps a crafted mirror from
/// choosing collisions ahead of time. One multiply left about one seed in 60 spreading 4,096
/// consecutive ids over fewer than 2,400 of 4,096 low-bit buckets (down to 2,042; a random
/// function fills about 2,590); the second brings the worst of 400 seeds to 2,529.
#[derive(Clone, Debug)]
struct Seeded(u64);

impl Seeded {
    fn new() -> Self {
        Seeded(RandomState::new().hash_one(0u64) | 1)
    }
}

impl BuildHasher for Seeded {
    type Hasher = Folded;

    fn build_hasher(&self) -> Folded {
        Folded(self.0)
    }
}

/// One `u64` folded into the seed; other writes (none for a `RequestId`) fold byte by byte.
#[derive(Debug)]
struct Folded(u64);

impl Hasher for Folded {
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(u64::from(byte));
        }
    }

    fn write_u64(&mut self, value: u64) {
        // The odd constants of SplitMix64: its increment (2^64 / the golden ratio) and its
        // first finaliser multiplier.
        const MIX: u64 = 0x9E37_79B9_7F4A_7C15;
        const MIX_2: u64 = 0xBF58_476D_1CE4_E5B9;
        let fold = |a: u64, b: u64| {
            let product = u128::from(a) * u128::from(b);
            (product as u64) ^ ((product >> 64) as u64)
        };
        self.0 = fold(fold(self.0 ^ value, MIX), MIX_2);
    }

    fn finish(&self) -> u64 {
        self.0
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

    /// hashbrown indexes by the low bits of a hash and tags by its top seven: both must spread
    /// for the ids a daemon uses (consecutive) and for ids that differ only in their high bits.
    #[test]
    fn request_ids_spread_over_the_low_and_the_top_bits() {
        // Many seeds: with one folded multiply about one seed in 60 spread badly, which a test
        // of one seed caught one run in 60; 128 seeds catch it in most runs.
        for (seeded, ids) in (0..128).map(|_| Seeded::new()).flat_map(|seeded| {
            [
                (seeded.clone(), (0..4_096u64).collect::<Vec<_>>()),
                (seeded, (0..4_096u64).map(|i| i << 50).collect()),
            ]
        }) {
            let hashes: Vec<u64> = ids
                .iter()
                .map(|id| seeded.hash_one(RequestId(*id)))
                .collect();
            let low: BTreeSet<u64> = hashes.iter().map(|h| h & 4_095).collect();
            let top: BTreeSet<u64> = hashes.iter().map(|h| h >> 57).collect();
            // A random function fills about 63 % of 4,096 buckets and all 128 tags.
            assert!(low.len() > 2_400, "{} low-bit buckets", low.len());
            assert_eq!(top.len(), 128);
        }
        assert_ne!(
            Seeded::new().hash_one(RequestId(1)),
            Seeded::new().hash_one(RequestId(1)),
            "each index draws its own seed"
        );
    }
}
