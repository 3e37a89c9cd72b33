//! `parkline redrive <mirror> [--seq N ...] [--dry-run]`: move dead letters back to the parked
//! list (spec/delivery.md D21), for an operator who fixed what made them fail; and
//! `parkline discard <mirror> (--seq N ... | --all | --older-than DURATION) [--dry-run]`: remove
//! dead letters from the mirror for good (D8), for an operator who has read them.
//! `--older-than` names the dead letters that died more than the duration before now, by each
//! one's time of death (D24); one without a time of death (it died in a mirror before format 4)
//! is never named, and the output says how many were left so.
//!
//! It takes the mirror's lock as the daemon does (spec/mirror.md M8), so it never writes beside a
//! live queue: while the daemon holds the lock it refuses and says so. It then opens the queue
//! (`parkline::Queue::open`, which also upgrades a mirror of an older format, M14) and calls
//! `Queue::redrive` or `Queue::redrive_all` (`Queue::discard` or `Queue::discard_all`), choosing
//! the dead letters from the state it read under the lock: one record, one fsync. It never
//! creates a mirror: a path with no mirror is an error. `--dry-run` reads and decodes the mirror
//! as `inspect` does, without the lock, and prints what would move, writing nothing at all (not
//! even the lock file).
//!
//! Exit status ([`crate::status`]): 0 applied (also when there was nothing to move), 1 the mirror
//! is damaged, 2 usage (clap's: a bad flag or duration; or a seq that is not a dead letter), 3 a
//! file cannot be read or written, 5 the lock is held, 6 no mirror exists at the path.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use parkline::mirror;
use parkline::ops::{self, OpId};
use parkline::{Clock, Config, ErrorKind, FsStorage, Item, Queue, Seq, Storage, SystemClock};

use crate::ask::{Ask, ask_daemon};
use crate::status;

/// The arguments of `parkline redrive`.
#[derive(Clone, Debug, clap::Parser)]
pub struct RedriveArgs {
    /// The mirror file
    pub mirror: std::path::PathBuf,
    /// The dead letter to move back (repeat for several); without it, every dead letter
    #[arg(long = "seq", value_name = "N")]
    pub seqs: Vec<u64>,
    /// Print what would move and write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// While the daemon holds the session: how long to wait for it to apply the request (it
    /// does so at the session's next boundary); a whole number and one unit of ms, s, m, h, d
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "0s")]
    pub wait: Duration,
    /// While the daemon holds the session: the request's id (1 to 64 of 0-9, a-z, '-'); give
    /// the id of an earlier request to wait for its answer again
    #[arg(long, value_name = "ID", value_parser = parse_id)]
    pub id: Option<OpId>,
}

/// The arguments of `parkline discard`.
#[derive(Clone, Debug, clap::Parser)]
// One of the three is required, and only one: a group, so the usage error names all three.
#[command(group(clap::ArgGroup::new("which").required(true).args(["seqs", "all", "older_than"])))]
pub struct DiscardArgs {
    /// The mirror file
    pub mirror: std::path::PathBuf,
    /// The dead letter to discard (repeat for several)
    #[arg(long = "seq", value_name = "N")]
    pub seqs: Vec<u64>,
    /// Discard every dead letter
    #[arg(long, conflicts_with = "seqs")]
    pub all: bool,
    /// Discard the dead letters that died more than DURATION ago: a whole number and one unit of
    /// ms, s, m, h, d (90s, 15m, 2h, 7d). A dead letter without a time of death (from a mirror
    /// before format 4) is kept
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub older_than: Option<Duration>,
    /// Print what would be discarded and write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// While the daemon holds the session: how long to wait for it to apply the request (it
    /// does so at the session's next boundary); a whole number and one unit of ms, s, m, h, d
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "0s")]
    pub wait: Duration,
    /// While the daemon holds the session: the request's id (1 to 64 of 0-9, a-z, '-'); give
    /// the id of an earlier request to wait for its answer again
    #[arg(long, value_name = "ID", value_parser = parse_id)]
    pub id: Option<OpId>,
}

/// Parses `--id`: a request id (spec/mirror.md M17).
///
/// # Errors
///
/// A text that is not 1 to 64 characters of `[0-9a-z-]`.
pub fn parse_id(text: &str) -> Result<OpId, String> {
    OpId::new(text)
}

/// Parses `--older-than`'s duration: a non-negative whole number followed by one unit, `ms`,
/// `s`, `m`, `h` or `d` (`90s`, `15m`, `2h`, `7d`); anything else is an error naming the form.
///
/// # Errors
///
/// A text of another form, or a duration past `u64::MAX` milliseconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    const FORM: &str = "expected a whole number and one unit of ms, s, m, h, d (90s, 15m, 2h, 7d)";
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let unit_ms: u64 = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(FORM.to_owned()),
    };
    if number.is_empty() {
        return Err(FORM.to_owned());
    }
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(unit_ms))
        .map(Duration::from_millis)
        .ok_or_else(|| format!("{text} is longer than {} days", u64::MAX / 86_400_000))
}

/// The dead letters a command names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Which {
    /// Every dead letter.
    All,
    /// The dead letters of these seqs; each must be one, named once.
    Seqs(Vec<Seq>),
    /// The dead letters that died more than `age` before `now_ms` (milliseconds since the Unix
    /// epoch), by their time of death (D24); one without a time of death is never named.
    OlderThan {
        /// How long before `now_ms` a dead letter must have died.
        age: Duration,
        /// The time `age` is counted back from.
        now_ms: u64,
    },
}

/// The dead letters of `dead` that died more than `age` before `now_ms`, and how many have no
/// time of death. A time of death after `now_ms` (a clock that went back) is an age of 0.
fn died_before(dead: &[Item], age: Duration, now_ms: u64) -> (Vec<Seq>, usize) {
    let named = dead
        .iter()
        .filter(|item| {
            item.died_at()
                .is_some_and(|died| u128::from(now_ms.saturating_sub(died)) > age.as_millis())
        })
        .map(|item| item.seq)
        .collect();
    let untimed = dead.iter().filter(|item| item.died_at().is_none()).count();
    (named, untimed)
}

/// What the command does to the dead letters it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    /// Back to the parked list (D21).
    Redrive,
    /// Out of the mirror for good (D8).
    Discard,
}

/// The request file's spelling of `which` (M17): seqs sorted, `--older-than` as the time
/// before which a dead letter must have died.
fn request_of(which: &Which) -> ops::Which {
    match which {
        Which::All => ops::Which::All,
        Which::Seqs(seqs) => {
            let mut sorted = seqs.clone();
            sorted.sort_unstable();
            ops::Which::Seqs(sorted)
        }
        Which::OlderThan { age, now_ms } => {
            let age_ms = u64::try_from(age.as_millis()).unwrap_or(u64::MAX);
            ops::Which::DiedBefore(now_ms.saturating_sub(age_ms))
        }
    }
}

impl Verb {
    fn of_ops(self) -> ops::Verb {
        match self {
            Verb::Redrive => ops::Verb::Redrive,
            Verb::Discard => ops::Verb::Discard,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Verb::Redrive => "redrive",
            Verb::Discard => "discard",
        }
    }
}

/// Entry point of `parkline redrive`.
pub fn main(args: &RedriveArgs) -> ExitCode {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    ExitCode::from(run(args, &mut stdout.lock(), &mut stderr.lock()))
}

/// Entry point of `parkline discard`.
pub fn discard_main(args: &DiscardArgs) -> ExitCode {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let (mut out, mut err) = (stdout.lock(), stderr.lock());
    ExitCode::from(run_discard(args, SystemClock.now_ms(), &mut out, &mut err))
}

/// Runs `parkline redrive` with `args`, writing to `out` and `err`; returns the exit status.
pub fn run(args: &RedriveArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let which = if args.seqs.is_empty() {
        Which::All
    } else {
        Which::Seqs(args.seqs.iter().copied().map(Seq).collect())
    };
    let ask = Ask {
        id: args.id.clone(),
        wait: args.wait,
    };
    run_verb(
        Verb::Redrive,
        args.mirror.as_path(),
        &which,
        (args.dry_run, &ask),
        out,
        err,
    )
}

/// Runs `parkline discard` with `args`, `--older-than` counting back from `now_ms`
/// (milliseconds since the Unix epoch), writing to `out` and `err`; returns the exit status.
pub fn run_discard(
    args: &DiscardArgs,
    now_ms: u64,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let which = match (args.older_than, args.all) {
        (Some(age), _) => Which::OlderThan { age, now_ms },
        (None, true) => Which::All,
        (None, false) => Which::Seqs(args.seqs.iter().copied().map(Seq).collect()),
    };
    let ask = Ask {
        id: args.id.clone(),
        wait: args.wait,
    };
    run_verb(
        Verb::Discard,
        args.mirror.as_path(),
        &which,
        (args.dry_run, &ask),
        out,
        err,
    )
}

/// Runs `parkline <verb>` on the dead letters `which` names of the mirror at `path`, only
/// printing what it would do when `dry_run_only`, and asking the daemon as `ask` says when the
/// daemon holds the session; returns the exit status.
pub fn run_verb(
    verb: Verb,
    path: &std::path::Path,
    which: &Which,
    (dry_run_only, ask): (bool, &Ask),
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let name = verb.name();
    let fail = |err: &mut dyn Write, e: &parkline::Error| {
        let advice = match e.kind() {
            ErrorKind::Locked => {
                "the daemon (or another parkline) holds the mirror's lock: stop it, or wait until \
                 it closes the mirror, then run the command again; nothing was changed"
            }
            ErrorKind::Corrupt => {
                "the mirror is damaged and was left as it is; see `parkline inspect` and \
                 spec/mirror.md section 6"
            }
            ErrorKind::NotDead => {
                "see the dead letters with `parkline inspect`; nothing was changed"
            }
            _ => "nothing was changed",
        };
        let _ = writeln!(err, "parkline {name}: {e}");
        let _ = writeln!(err, "{advice}");
        match e.kind() {
            ErrorKind::Corrupt => status::FINDING,
            ErrorKind::NotDead => status::USAGE,
            ErrorKind::Locked => status::LOCKED,
            _ => status::IO,
        }
    };
    //= spec/delivery.md#d21-dead-letter-redrive
    //# `parkline redrive` MUST NOT create a mirror or its lock file where none exists: a path
    //# with no mirror is an error (exit 6, no such session), with or without `--dry-run`.
    if let Err(status) = mirror_exists(name, path, err) {
        return status;
    }
    if dry_run_only {
        return dry_run(verb, path, which, out, err, &fail);
    }
    // M8: the lock first, as the daemon takes it; a live daemon makes this fail at once.
    let mut storage = match FsStorage::open(path) {
        Ok(storage) => storage,
        //= spec/mirror.md#m17-operator-requests-to-a-live-session
        //# An operator command that changes a session's dead letters (`parkline redrive`,
        //# `parkline discard`) and finds the mirror's lock held (M8) asks the holder to make the
        //# change: it adds a request to the session's request file `<name>.ops`, and the holder
        //# applies it.
        Err(e) if e.kind() == ErrorKind::Locked => {
            return ask_daemon(path, verb.of_ops(), request_of(which), ask, out, err);
        }
        Err(e) => return fail(err, &e),
    };
    let mirror_name = storage.mirror_name().to_owned();
    // Removed between the check above and the lock: still never created.
    match storage.read_chunks(&mirror_name, &mut |_| std::ops::ControlFlow::Break(())) {
        Ok(true) => {}
        Ok(false) => {
            let _ = writeln!(err, "parkline {name}: {} does not exist", path.display());
            return status::NO_SUCH_SESSION;
        }
        Err(e) => {
            let _ = writeln!(err, "parkline {name}: cannot read {}: {e}", path.display());
            return status::IO;
        }
    }
    let mut queue = match Queue::with_storage(storage, &mirror_name, Config::default()) {
        Ok(queue) => queue,
        Err(e) => return fail(err, &e),
    };
    // Chosen from the state read under the lock: whatever the daemon did before it let go counts.
    let dead: Vec<Item> = queue.dead_letters().to_vec();
    let (seqs, untimed) = match which {
        Which::All => (Vec::new(), 0),
        Which::Seqs(seqs) => (seqs.clone(), 0),
        Which::OlderThan { age, now_ms } => died_before(&dead, *age, *now_ms),
    };
    let moved = match (verb, which) {
        (Verb::Redrive, Which::All) => queue.redrive_all(),
        (Verb::Redrive, _) => queue.redrive(&seqs),
        (Verb::Discard, Which::All) => queue.discard_all(),
        (Verb::Discard, _) => queue.discard(&seqs),
    };
    let done = match verb {
        Verb::Redrive => "redrove",
        Verb::Discard => "discarded",
    };
    match moved {
        Ok(moved) => report(verb, out, done, &dead, &moved, untimed),
        Err(e) => fail(err, &e),
    }
}

/// Whether a mirror exists at `path`, for a command that never creates one; the exit status when
/// not: no such session (6) when nothing is there, 3 when the path cannot be looked at.
pub(crate) fn mirror_exists(
    command: &str,
    path: &std::path::Path,
    err: &mut dyn Write,
) -> Result<(), u8> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => Ok(()),
        Err(e) => {
            let _ = writeln!(
                err,
                "parkline {command}: {}: {e}; {command} never creates a mirror, check the path",
                path.display()
            );
            Err(if e.kind() == std::io::ErrorKind::NotFound {
                status::NO_SUCH_SESSION
            } else {
                status::IO
            })
        }
    }
}

/// `--dry-run`: read and decode the mirror as `inspect` does, lock-free and writing nothing (the
/// answer is the mirror as of the read), and say what would move.
fn dry_run(
    verb: Verb,
    path: &std::path::Path,
    which: &Which,
    out: &mut dyn Write,
    err: &mut dyn Write,
    fail: &dyn Fn(&mut dyn Write, &parkline::Error) -> u8,
) -> u8 {
    let bytes = match ops::read_input(path) {
        Ok(bytes) => bytes,
        Err(e) => {
            let _ = writeln!(
                err,
                "parkline {}: cannot read {}: {e}",
                verb.name(),
                path.display()
            );
            return if e.kind() == std::io::ErrorKind::NotFound {
                status::NO_SUCH_SESSION
            } else {
                status::IO
            };
        }
    };
    let state = match mirror::decode_log(&bytes) {
        Ok(decoded) => decoded.state,
        Err(e) => return fail(err, &e.with_path(path)),
    };
    let dead = state.dead_letters;
    let (named, untimed): (Vec<Seq>, usize) = match which {
        Which::All => (dead.iter().map(|item| item.seq).collect(), 0),
        Which::OlderThan { age, now_ms } => died_before(&dead, *age, *now_ms),
        Which::Seqs(seqs) => match checked_seqs(verb, seqs, &dead, err) {
            Ok(sorted) => (sorted, 0),
            Err(status) => return status,
        },
    };
    let would = match verb {
        Verb::Redrive => "would redrive",
        Verb::Discard => "would discard",
    };
    report(verb, out, would, &dead, &named, untimed)
}

/// `seqs` sorted, when each is a dead letter of `dead` named once; else the usage status, said
/// on `err`, as the queue's `NotDead` would be.
fn checked_seqs(
    verb: Verb,
    seqs: &[Seq],
    dead: &[Item],
    err: &mut dyn Write,
) -> Result<Vec<Seq>, u8> {
    let mut sorted = seqs.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted.len() != seqs.len() {
        let _ = writeln!(
            err,
            "parkline {}: a seq is named twice; nothing would change",
            verb.name()
        );
        return Err(status::USAGE);
    }
    if let Some(seq) = sorted
        .iter()
        .find(|seq| !dead.iter().any(|item| item.seq == **seq))
    {
        let _ = writeln!(
            err,
            "parkline {}: seq {seq} is not a dead letter; nothing would change",
            verb.name()
        );
        return Err(status::USAGE);
    }
    Ok(sorted)
}

/// One line per dead letter moved or removed, then a summary, and how many dead letters were
/// left for having no time of death (`untimed`) when there are any.
fn report(
    verb: Verb,
    out: &mut dyn Write,
    done: &str,
    dead: &[Item],
    moved: &[Seq],
    untimed: usize,
) -> u8 {
    let mut text = String::new();
    for item in dead.iter().filter(|item| moved.contains(&item.seq)) {
        let failures = match verb {
            Verb::Redrive => format!("failures {} -> 0", item.failures),
            Verb::Discard => format!("failures {}", item.failures),
        };
        text.push_str(&format!(
            "{done} seq {} (request {}, {failures}, handed {}): {}\n",
            item.seq, item.request, item.handed, item.line
        ));
    }
    let whither = match verb {
        Verb::Redrive => "back to the parked list",
        Verb::Discard => "from the mirror",
    };
    text.push_str(&format!(
        "{done} {} of {} dead letters {whither}\n",
        moved.len(),
        dead.len()
    ));
    if untimed > 0 {
        text.push_str(&format!(
            "left {untimed} dead letters without a time of death (they died in a mirror before \
             format 4): --older-than never names them\n"
        ));
    }
    if out.write_all(text.as_bytes()).is_err() {
        return status::IO;
    }
    status::APPLIED
}

#[cfg(test)]
mod tests {
    use super::*;
    use parkline::RequestId;

    /// A dead letter of seq `seq` that died at `died`.
    fn dead(seq: u64, died: Option<u64>) -> Item {
        let mut item = Item::new(Seq(seq), RequestId(seq), "failed");
        item.died_at = died;
        item
    }

    /// D24: `--older-than` names a dead letter that died more than the duration ago, not one
    /// that died exactly that long ago, nor one whose time is ahead of now (a clock that went
    /// back), nor one without a time of death, which it counts apart.
    #[test]
    fn older_than_names_only_dead_letters_that_died_more_than_the_duration_ago() {
        let now = 10_000_000;
        let letters = [
            dead(1, Some(now - 3_600_001)),
            dead(2, Some(now - 3_600_000)),
            dead(3, None),
            dead(4, Some(now + 5)),
            dead(5, Some(0)),
        ];
        let hour = Duration::from_secs(3600);
        assert_eq!(died_before(&letters, hour, now), (vec![Seq(1), Seq(5)], 1));
        assert_eq!(
            died_before(&letters, Duration::ZERO, now),
            (vec![Seq(1), Seq(2), Seq(5)], 1)
        );
        assert_eq!(died_before(&letters, Duration::MAX, now), (vec![], 1));
    }

    /// `--older-than`'s durations: a whole number and one unit; the longest fits in u64
    /// milliseconds.
    #[test]
    fn durations_are_a_whole_number_and_one_unit() {
        let ms = |text: &str| parse_duration(text).map(|d| d.as_millis());
        assert_eq!(ms("0ms"), Ok(0));
        assert_eq!(ms("250ms"), Ok(250));
        assert_eq!(ms("90s"), Ok(90_000));
        assert_eq!(ms("15m"), Ok(900_000));
        assert_eq!(ms("2h"), Ok(7_200_000));
        assert_eq!(ms("7d"), Ok(604_800_000));
        assert_eq!(ms("18446744073709551615ms"), Ok(u128::from(u64::MAX)));
        for bad in [
            "", "ms", "10", "1.5h", "-1h", "+1h", " 1h", "1h ", "1 h", "1H", "2h30m", "1w",
        ] {
            let e = parse_duration(bad).err().unwrap_or_default();
            assert!(e.contains("one unit of ms, s, m, h, d"), "{bad:?}: {e}");
        }
        let e = parse_duration("213503982335d").err().unwrap_or_default();
        assert_eq!(e, "213503982335d is longer than 213503982334 days");
    }
}
