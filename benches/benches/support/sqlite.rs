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
                 line TEXT NOT NULL
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
