//! A store's pool of session mirror descriptors (M16), PostgreSQL's virtual file descriptors:
//! the idle descriptors, least recently used first, and a count of every open one; the
//! descriptor a handle caches, with its file's identity; and a session's membership of its
//! store, which names the session and its descriptor in the pool. The store itself is above
//! this floor: a member reaches it through [`Sessions`].

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::fs::File;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::error::Result;

/// A file's identity: its device and inode.
pub(crate) type Key = (u64, u64);

/// A cached descriptor and the identity (device, inode) of the file it was opened on; a store
/// session's counts in its store's pool until it closes.
#[derive(Debug)]
pub(crate) struct Handle {
    pub(crate) file: File,
    pub(crate) key: Key,
    pub(crate) counted: Option<Arc<Pool>>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        if let Some(pool) = &self.counted {
            pool.closed();
        }
    }
}

/// What a store does for its members: gives a session's name to a new member, and takes it
/// back.
pub(crate) trait Sessions: Debug + Send + Sync {
    /// Makes `name` a member held by a new id, unless a queue holds it already.
    fn join(self: Arc<Self>, name: &str) -> Result<Member>;

    /// The member `id` of `name` left: the name is free, unless another member took it over.
    fn leave(&self, name: &str, id: u64);
}

/// A session's membership of its store, held by its queue's storage: the name is the queue's
/// until this is dropped.
#[derive(Debug)]
pub(crate) struct Member {
    sessions: Arc<dyn Sessions>,
    pool: Arc<Pool>,
    name: String,
    id: u64,
    /// Set when `again` handed the name to a new member, so dropping this one frees nothing.
    moved: AtomicBool,
}

impl Member {
    /// Member `id` of `name` in the store `sessions`, whose descriptors live in `pool`.
    pub(crate) fn new(sessions: Arc<dyn Sessions>, pool: Arc<Pool>, name: &str, id: u64) -> Member {
        Member {
            sessions,
            pool,
            name: name.to_owned(),
            id,
            moved: AtomicBool::new(false),
        }
    }

    pub(crate) fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// The session's membership for `Queue::reopen`: a new member takes the name over.
    pub(crate) fn again(&self) -> Result<Member> {
        if !self.moved.swap(true, Ordering::AcqRel) {
            self.leave();
        }
        Arc::clone(&self.sessions).join(&self.name)
    }

    fn leave(&self) {
        self.sessions.leave(&self.name, self.id);
        drop(self.pool.take(self.id));
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        if !self.moved.load(Ordering::Acquire) {
            self.leave();
        }
    }
}

/// The pool of a store's session mirror descriptors (M16): the idle ones, least recently used
/// first, and a count of every open one, idle or in a call.
#[derive(Debug)]
pub(crate) struct Pool {
    max_open: usize,
    open: AtomicUsize,
    idle: Mutex<Idle>,
    evictions: AtomicU64,
    reopens: AtomicU64,
}

#[derive(Debug, Default)]
struct Idle {
    tick: u64,
    /// By the tick of their return: the least recently used first.
    handles: BTreeMap<u64, (u64, Handle)>,
    /// Each member's tick in `handles`.
    ticks: HashMap<u64, u64>,
}

impl Pool {
    pub(crate) fn new(max_open: usize) -> Pool {
        Pool {
            max_open,
            open: AtomicUsize::new(0),
            idle: Mutex::new(Idle::default()),
            evictions: AtomicU64::new(0),
            reopens: AtomicU64::new(0),
        }
    }

    /// The descriptors open now, idle or in a call.
    pub(crate) fn open(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    /// The most descriptors kept open between calls.
    pub(crate) fn max_open(&self) -> usize {
        self.max_open
    }

    /// The idle descriptors closed to make room, so far.
    pub(crate) fn evictions(&self) -> u64 {
        self.evictions.load(Ordering::Relaxed)
    }

    /// The mirrors opened again after their descriptor was closed, so far.
    pub(crate) fn reopens(&self) -> u64 {
        self.reopens.load(Ordering::Relaxed)
    }

    fn idle(&self) -> MutexGuard<'_, Idle> {
        // Every change keeps `handles` and `ticks` in step before it can panic.
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a descriptor about to be opened; the `Handle` that holds it gives it back.
    pub(crate) fn opening(self: &Arc<Self>) -> Arc<Pool> {
        self.open.fetch_add(1, Ordering::AcqRel);
        Arc::clone(self)
    }

    /// A counted descriptor was closed.
    pub(crate) fn closed(&self) {
        let before = self.open.fetch_sub(1, Ordering::AcqRel);
        debug_assert!(before > 0, "a closed descriptor was counted");
    }

    pub(crate) fn reopened(&self) {
        self.reopens.fetch_add(1, Ordering::Relaxed);
    }

    /// Member `id`'s idle descriptor, taken out of the pool for a call.
    pub(crate) fn take(&self, id: u64) -> Option<Handle> {
        let mut idle = self.idle();
        let tick = idle.ticks.remove(&id)?;
        idle.handles.remove(&tick).map(|(_, handle)| handle)
    }

    /// Gives member `id`'s descriptor back, then closes the least recently used idle ones
    /// while more than `max_open` are open.
    pub(crate) fn put(&self, id: u64, handle: Handle) {
        //= spec/mirror.md#m16-a-store-of-sessions
        //# Between calls, a store MUST keep at most `max_open` session mirror descriptors open,
        //# closing the least recently used idle one first; a session's next call MUST open its
        //# mirror again and check that it is the file the session wrote (M8).
        let evicted = {
            let mut idle = self.idle();
            idle.tick += 1;
            let tick = idle.tick;
            idle.handles.insert(tick, (id, handle));
            let before = idle.ticks.insert(id, tick);
            debug_assert!(before.is_none(), "a member has one mirror descriptor");
            self.evict(&mut idle, self.max_open)
        };
        drop(evicted);
    }

    /// Before a descriptor is opened: closes idle ones until there is room for it.
    pub(crate) fn make_room(&self) {
        let evicted = self.evict(&mut self.idle(), self.max_open.saturating_sub(1));
        drop(evicted);
    }

    /// The idle descriptors to close (after the pool's lock is released) so that at most
    /// `keep` are open, as far as idle ones allow.
    fn evict(&self, idle: &mut Idle, keep: usize) -> Vec<Handle> {
        let mut evicted = Vec::new();
        // Each handle counts itself open until it is dropped, after this loop.
        while self
            .open
            .load(Ordering::Acquire)
            .saturating_sub(evicted.len())
            > keep
        {
            let Some((_, (id, handle))) = idle.handles.pop_first() else {
                break;
            };
            idle.ticks.remove(&id);
            evicted.push(handle);
        }
        self.evictions
            .fetch_add(evicted.len() as u64, Ordering::Relaxed);
        evicted
    }
}
