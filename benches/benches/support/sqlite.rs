//! The SQLite baseline: what a user would pick instead of a purpose-built mirror.
//!
//! One table of parked lines in WAL mode with `synchronous=FULL`, so that every committed insert
//! is durable when it returns (WAL with `NORMAL` would not be: it syncs only at checkpoints).
//! Lives here rather than in the library because `rusqlite` is a dev-dependency, kept out of
//! `cargo test`.

// Each bench binary includes this module and uses a different part of it.
#![allow(dead_code)]

use std::path::Path;

use rusqlite::{Connection, params};

/// A queue of parked lines in one SQLite database file.
pub struct SqliteQueue {
    conn: Connection,
}

impl SqliteQueue {
    /// Opens (or creates) `path` in WAL mode, `synchronous=FULL`.
    pub fn open(path: &Path) -> rusqlite::Result<Self> {
        let conn = Connection::open(path)?;
        let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))?;
        assert_eq!(mode, "wal", "SQLite refused WAL mode");
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS parked (
                 seq INTEGER PRIMARY KEY AUTOINCREMENT,
                 request INTEGER NOT NULL,
                 line TEXT NOT NULL,
                 batch INTEGER
             )",
        )?;
        Ok(SqliteQueue { conn })
    }

    /// Parks one line: one autocommit insert, durable on return.
    pub fn park(&mut self, request: u64, line: &str) -> rusqlite::Result<()> {
        let mut insert = self
            .conn
            .prepare_cached("INSERT INTO parked (request, line) VALUES (?1, ?2)")?;
        insert.execute(params![request as i64, line])?;
        Ok(())
    }

    /// Parks `lines` in one transaction (fixture building).
    pub fn park_many(
        &mut self,
        lines: impl Iterator<Item = (u64, String)>,
    ) -> rusqlite::Result<()> {
        let tx = self.conn.transaction()?;
        {
            let mut insert =
                tx.prepare_cached("INSERT INTO parked (request, line) VALUES (?1, ?2)")?;
            for (request, line) in lines {
                insert.execute(params![request as i64, line])?;
            }
        }
        tx.commit()
    }

    /// A boundary's first durability point: every unbatched line is marked as batch `batch` and
    /// read back, in one transaction, durable on return (the batch before its hand-over).
    pub fn boundary(&mut self, batch: i64) -> rusqlite::Result<Vec<(u64, String)>> {
        let tx = self.conn.transaction()?;
        let lines = {
            tx.prepare_cached("UPDATE parked SET batch = ?1 WHERE batch IS NULL")?
                .execute(params![batch])?;
            let mut select = tx
                .prepare_cached("SELECT request, line FROM parked WHERE batch = ?1 ORDER BY seq")?;
            let rows = select.query_map(params![batch], |row| {
                Ok((row.get::<_, i64>(0)? as u64, row.get(1)?))
            })?;
            rows.collect::<rusqlite::Result<Vec<_>>>()?
        };
        tx.commit()?;
        Ok(lines)
    }

    /// A boundary's second durability point: the delivered batch is cleared (one autocommit
    /// delete, durable on return).
    pub fn settle(&mut self, batch: i64) -> rusqlite::Result<usize> {
        self.conn
            .prepare_cached("DELETE FROM parked WHERE batch = ?1")?
            .execute(params![batch])
    }

    /// Every parked line in seq order, as a daemon reads them back after a crash.
    pub fn load(&mut self) -> rusqlite::Result<Vec<(u64, String)>> {
        let mut select = self
            .conn
            .prepare_cached("SELECT request, line FROM parked ORDER BY seq")?;
        let rows = select.query_map([], |row| Ok((row.get::<_, i64>(0)? as u64, row.get(1)?)))?;
        rows.collect()
    }

    /// Number of parked lines.
    pub fn len(&self) -> rusqlite::Result<u64> {
        self.conn
            .query_row("SELECT COUNT(*) FROM parked", [], |row| {
                row.get::<_, i64>(0)
            })
            .map(|n| n as u64)
    }
}
