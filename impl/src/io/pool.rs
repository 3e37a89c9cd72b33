//! A store's pool of session descriptors (M16), PostgreSQL's virtual file descriptors: a slot
//! for every descriptor open, idle or in a call, and the idle ones, least recently used first; the
//! descriptor a handle caches, with its file's identity; and a session's membership of its
//! store, which names the session and its descriptor in the pool. The store itself is above
//! this floor: a member reaches it through [`Sessions`].

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use crate::error::Result;

/// A file's identity: its device and inode.
pub(crate) type Key = (u64, u64);

/// A cached descriptor and the identity (device, inode) of the file it was opened on; a store
/// session's holds a slot of its store's pool until it closes.
#[derive(Debug)]
pub(crate) struct Handle {
    pub(crate) file: File,
    pub(crate) key: Key,
    /// Dropped after `file`, so the slot is given back once the descriptor is closed.
    pub(crate) slot: Option<Slot>,
}

/// What a store does for its members: gives a session's name to a new member, and takes it
/// back.
pub(crate) trait Sessions: Debug + Send + Sync {
    /// Makes `name` a member held by a new id, unless a queue holds it already.
    fn join(self: Arc<Self>, name: &str) -> Result<Member>;

    /// The member `id` of `name` left: the name is free, unless another member took it over.
    fn leave(&self, name: &str, id: u64);

    /// Fsyncs the store's directory through the store's own descriptor of it.
    fn sync_dir(&self) -> io::Result<()>;
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

    /// Fsyncs the store's directory (M5, M10) without opening a descriptor.
    pub(crate) fn sync_dir(&self) -> io::Result<()> {
        self.sessions.sync_dir()
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

/// The pool of a store's session descriptors (M16): every descriptor a session opens in the
/// store's directory holds one of its `max_open` slots, idle or in a call; the idle mirror
/// descriptors wait in it, least recently used first, for their session's next call or to be
/// closed for another's.
#[derive(Debug)]
pub(crate) struct Pool {
    max_open: usize,
    slots: Mutex<Slots>,
    /// Signalled when a slot is given back or an idle descriptor put in.
    freed: Condvar,
    evictions: AtomicU64,
    reopens: AtomicU64,
    waits: AtomicU64,
}

#[derive(Debug, Default)]
struct Slots {
    /// Descriptors open now, idle or in a call: at most `max_open`.
    open: usize,
    /// Calls waiting for a slot: signalled only when there are some.
    waiting: usize,
    tick: u64,
    /// By the tick of their return: the least recently used first.
    handles: BTreeMap<u64, (u64, Handle)>,
    /// Each member's tick in `handles`.
    ticks: HashMap<u64, u64>,
}

/// One of a pool's slots, held by the descriptor it was taken for: given back when dropped.
#[derive(Debug)]
pub(crate) struct Slot {
    pool: Arc<Pool>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.pool.give_back();
    }
}

impl Pool {
    pub(crate) fn new(max_open: usize) -> Pool {
        assert!(max_open > 0, "a session's call needs one descriptor");
        Pool {
            max_open,
            slots: Mutex::new(Slots::default()),
            freed: Condvar::new(),
            evictions: AtomicU64::new(0),
            reopens: AtomicU64::new(0),
            waits: AtomicU64::new(0),
        }
    }

    /// The descriptors open now, idle or in a call.
    pub(crate) fn open(&self) -> usize {
        self.slots().open
    }

    /// The most descriptors open at once.
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

    /// The slots waited for, every one in use by a call, so far.
    pub(crate) fn waits(&self) -> u64 {
        self.waits.load(Ordering::Relaxed)
    }

    fn slots(&self) -> MutexGuard<'_, Slots> {
        // Every change keeps `open`, `handles` and `ticks` in step before it can panic.
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A slot for a descriptor about to be opened: a free one, or the least recently used idle
    /// descriptor's (closed after the pool's lock is released), or, while every slot is in a
    /// call, the first given back. The caller holds no other slot in a call, so each holder
    /// gives its slot back without waiting for one, and the wait ends.
    pub(crate) fn acquire(self: &Arc<Self>) -> Slot {
        //= spec/mirror.md#m16-a-store-of-sessions
        //# A store MUST keep at most `max_open` descriptors of its sessions' files open, idle or
        //# in a call; a call that needs one while all are open MUST close the least recently
        //# used idle mirror descriptor, or, when every one is in a call, wait for one to be
        //# given back.
        let mut slots = self.slots();
        let mut waited = false;
        let mut evicted = Vec::new();
        let slot = loop {
            if slots.open < self.max_open {
                slots.open += 1;
                break Slot {
                    pool: Arc::clone(self),
                };
            }
            if let Some((_, (id, mut handle))) = slots.handles.pop_first() {
                slots.ticks.remove(&id);
                // The slot passes from the idle descriptor to the caller.
                let slot = handle.slot.take();
                evicted.push(handle);
                match slot {
                    Some(slot) => break slot,
                    None => continue,
                }
            }
            if !waited {
                waited = true;
                self.waits.fetch_add(1, Ordering::Relaxed);
            }
            slots.waiting += 1;
            slots = self
                .freed
                .wait(slots)
                .unwrap_or_else(PoisonError::into_inner);
            slots.waiting -= 1;
        };
        drop(slots);
        self.evictions
            .fetch_add(evicted.len() as u64, Ordering::Relaxed);
        // Closed outside the pool's lock.
        drop(evicted);
        slot
    }

    fn give_back(&self) {
        let mut slots = self.slots();
        debug_assert!(slots.open > 0, "a slot given back was taken");
        slots.open -= 1;
        let waiting = slots.waiting > 0;
        drop(slots);
        if waiting {
            self.freed.notify_one();
        }
    }

    pub(crate) fn reopened(&self) {
        self.reopens.fetch_add(1, Ordering::Relaxed);
    }

    /// Member `id`'s idle descriptor, taken out of the pool for a call.
    pub(crate) fn take(&self, id: u64) -> Option<Handle> {
        let mut slots = self.slots();
        let tick = slots.ticks.remove(&id)?;
        slots.handles.remove(&tick).map(|(_, handle)| handle)
    }

    /// Gives member `id`'s descriptor back to wait idle for its next call; a call waiting for a
    /// slot may close it.
    pub(crate) fn put(&self, id: u64, handle: Handle) {
        debug_assert!(handle.slot.is_some(), "a pooled descriptor holds its slot");
        let mut slots = self.slots();
        slots.tick += 1;
        let tick = slots.tick;
        slots.handles.insert(tick, (id, handle));
        let before = slots.ticks.insert(id, tick);
        debug_assert!(before.is_none(), "a member has one mirror descriptor");
        let waiting = slots.waiting > 0;
        drop(slots);
        if waiting {
            self.freed.notify_one();
        }
    }
}
