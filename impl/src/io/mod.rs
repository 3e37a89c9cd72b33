//! The files: the `Storage` trait and its file system and memory implementations, the mirror's
//! locks, the store's descriptor pool, and every open of a file another process can write (M8).

pub(crate) mod input;
pub(crate) mod lock;
pub(crate) mod mem;
pub(crate) mod pool;
pub(crate) mod seam;
pub(crate) mod storage;
