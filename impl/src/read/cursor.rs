//! The [`Cursor`]: a caller's position in a child's transcript, handed out as opaque text and
//! parsed back exactly (spec/read.md section 5). It lives in its own file because its text form
//! is a format: versioned, checksummed, and recognised in its older forms.

use std::fmt;
use std::str::FromStr;

use super::error_text::{RESUME, echo};
use super::ids::{ChildId, TurnRef, TurnSeq};
use crate::crc64::crc64;
use crate::error::{Error, ErrorKind};

/// Where a caller is in a child's transcript: the child, the sequence number of the last
/// completed turn it has been given with a check of that turn's id, and how much of the partial
/// turn it has seen.
///
/// Opaque to the caller (R7): it is handed back as text,
/// `v3.<seq hex>.<turn check>.<seen>.<check>.<child id>` (`spec/read.md` section 5), and parsed
/// back with [`Cursor::parse`] (or `str::parse`). The child id itself is in the text, so a cursor
/// of another child is told from this child's for every pair of ids; the turn check tells a
/// transcript rebuilt with another turn at the cursor's seq (section 5.2); the outer check is a
/// CRC-32 over everything else, so a damaged cursor is told from another child's. It carries no
/// daemon-side state and names positions by turn seq and id, so a cursor stays valid across a
/// restart that rebuilds the transcript from the same turns, and can be kept by the daemon
/// (text, or serde as a string). A cursor of the older `v2` form still reads (section 5.3).
///
/// # Example
///
/// ```
/// use parkline::read::{ChildId, Cursor};
/// let child = ChildId::new("s980-1")?;
/// let start = Cursor::start(&child);
/// let text = start.to_string();
/// assert_eq!(text.parse::<Cursor>()?, start);
/// assert_eq!(start.child(), &child);
/// assert!(Cursor::parse("v3.0.0.0.00000000.s980-1").is_err()); // wrong check
/// # Ok::<(), parkline::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Cursor {
    pub(super) child: ChildId,
    pub(super) seq: TurnSeq,
    /// The CRC-64 of the id of the turn at `seq`: `None` at seq 0 and in a v2 cursor.
    pub(super) turn: Option<u64>,
    pub(super) seen: Option<Seen>,
    pub(super) version: Version,
}

/// The cursor's text form: `V3` is written; `V2` is read (section 5.3) and written back only as
/// the text it was parsed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Version {
    V2,
    V3,
}

impl Version {
    fn tag(self) -> &'static str {
        match self {
            Version::V2 => "v2",
            Version::V3 => "v3",
        }
    }

    /// Hex digits of the partial-turn record's prefix check: CRC-32 in v2, CRC-64 in v3.
    fn prefix_digits(self) -> usize {
        match self {
            Version::V2 => 8,
            Version::V3 => 16,
        }
    }
}

/// What a cursor holds of the partial turn: the caller was given (as far as it knows) its first
/// `chars` characters, whose UTF-8 bytes have the check `prefix` (CRC-64 in a v3 cursor, CRC-32
/// in a v2 one), while the child's latest turn was `after`. A later partial turn that starts
/// with the same characters after the same turn has only grown; any other has been replaced
/// (R15).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct Seen {
    pub(super) after: TurnSeq,
    pub(super) chars: usize,
    pub(super) prefix: u64,
}

/// The check of a turn id that a v3 cursor carries (section 5).
pub(super) fn turn_check(id: &str) -> u64 {
    crc64(id.as_bytes())
}

/// Appends `n` in lower-case hex, at least `width` digits: cursors are written without the
/// formatting machinery because every read writes one and sizes several.
fn push_hex(text: &mut String, n: u64, width: usize) {
    let digits = hex_digits(n).max(width);
    for shift in (0..digits).rev() {
        let nibble = (n >> (4 * shift)) & 0xf;
        text.push(char::from(b"0123456789abcdef"[nibble as usize]));
    }
}

fn hex_digits(n: u64) -> usize {
    (n.checked_ilog2().unwrap_or(0) / 4 + 1) as usize
}

/// The retired v1 form, `v1.<seq hex>.<crc32 of the child id>.<check>`: still recognised so that
/// a caller holding one is told what to do instead of being told it is damaged.
fn is_v1_cursor(text: &str) -> bool {
    if !text.starts_with("v1.") {
        return false;
    }
    let parts: Vec<&str> = text.split('.').collect();
    let [version, seq, tag, check] = parts[..] else {
        return false;
    };
    let (Ok(seq), Ok(tag), Ok(check)) = (
        u64::from_str_radix(seq, 16),
        u32::from_str_radix(tag, 16),
        u32::from_str_radix(check, 16),
    ) else {
        return false;
    };
    let expected = crc32fast::hash(format!("parkline-cursor-v1 {seq:x} {tag:08x}").as_bytes());
    version == "v1" && check == expected && text == format!("v1.{seq:x}.{tag:08x}.{check:08x}")
}

impl Seen {
    /// `0`, or `<chars hex>-<after hex>-<prefix check>`.
    fn push(text: &mut String, seen: Option<Seen>, version: Version) {
        match seen {
            None => text.push('0'),
            Some(Seen {
                after,
                chars,
                prefix,
            }) => {
                push_hex(text, chars as u64, 1);
                text.push('-');
                push_hex(text, after.0, 1);
                text.push('-');
                push_hex(text, prefix, version.prefix_digits());
            }
        }
    }

    fn text_len(seen: Option<Seen>, version: Version) -> usize {
        seen.map_or(1, |seen| {
            hex_digits(seen.chars as u64)
                + 1
                + hex_digits(seen.after.0)
                + 1
                + version.prefix_digits()
        })
    }

    fn parse(text: &str, version: Version) -> Option<Option<Seen>> {
        if text == "0" {
            return Some(None);
        }
        let mut parts = text.split('-');
        let (Some(chars), Some(after), Some(prefix), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        //= spec/read.md#5-1-the-partial-turn-record
        //# A record of 0 chars has no form: a cursor text with one MUST fail with `CursorDamaged`.
        let chars = usize::from_str_radix(chars, 16)
            .ok()
            .filter(|chars| *chars > 0)?;
        //= spec/read.md#5-3-a-cursor-of-version-2
        //# A v2 cursor whose partial-turn check is not exactly 8 hex digits MUST fail with
        //# `CursorDamaged`.
        // Checked here because the canonical spelling cannot refuse a wider check: `push_hex`
        // writes every digit of a value wider than its width.
        if prefix.len() != version.prefix_digits() {
            return None;
        }
        Some(Some(Seen {
            chars,
            after: TurnSeq(u64::from_str_radix(after, 16).ok()?),
            prefix: u64::from_str_radix(prefix, 16).ok()?,
        }))
    }
}

impl Cursor {
    /// The v3 cursor of `child` at `seq` after the turn whose id has check `turn` (`None` only
    /// at seq 0), recording `seen` of the partial turn.
    pub(super) fn at(child: &ChildId, seq: TurnSeq, turn: Option<u64>, seen: Option<Seen>) -> Self {
        debug_assert_eq!(
            seq.0 == 0,
            turn.is_none(),
            "a v3 cursor names the turn at its seq"
        );
        Cursor {
            child: child.clone(),
            seq,
            turn,
            seen,
            version: Version::V3,
        }
    }

    /// Whether this cursor names the turn it follows: a v2 cursor past seq 0 does not, so a
    /// read can only trust its seq (section 5.3).
    pub(super) fn unchecked(&self) -> bool {
        self.version == Version::V2 && self.seq.0 > 0
    }

    /// The cursor before the first turn of `child`: a `since` read with it returns the
    /// transcript from its beginning.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Cursor, TurnSeq};
    /// let start = Cursor::start(&ChildId::new("c")?);
    /// assert_eq!(start.seq(), TurnSeq(0));
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn start(child: &ChildId) -> Self {
        Cursor::at(child, TurnSeq(0), None, None)
    }

    /// Parses a cursor handed back by a caller.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::CursorDamaged`] when `text` is not exactly the text of a cursor (any
    /// changed, added or removed character; the check catches every single-character change).
    /// [`ErrorKind::CursorRetired`] for a cursor of the retired v1 form. A cursor of another
    /// child parses; `Transcript::read` rejects it.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::ErrorKind;
    /// use parkline::read::{ChildId, Cursor};
    /// let text = Cursor::start(&ChildId::new("c")?).to_string();
    /// let damaged = text.replacen("v3.0", "v3.1", 1);
    /// assert_eq!(Cursor::parse(&damaged).unwrap_err().kind(), ErrorKind::CursorDamaged);
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn parse(text: &str) -> Result<Self, Error> {
        //= spec/read.md#r7-opaque-cursor-typed-errors
        //# A read with a cursor whose text is not exactly a cursor's MUST fail with
        //# `CursorDamaged`; with a cursor of another child, with `CursorOtherChild`, for **every**
        //# pair of distinct child ids (the cursor names its child, it does not carry a hash of it);
        //# with a cursor of the retired v1 form, with `CursorRetired`; with a cursor past the
        //# child's latest turn, with `CursorAhead`;
        //# with a cursor whose turn the transcript no longer has at its seq, with
        //# `CursorDiverged` (section 5.2).
        let damaged = || {
            Error::new(
                ErrorKind::CursorDamaged,
                format!(
                    "cursor {} is not a cursor; pass the next cursor of a read back unchanged, or \
                     {RESUME}",
                    echo(text)
                ),
            )
        };
        if is_v1_cursor(text) {
            return Err(Error::new(
                ErrorKind::CursorRetired,
                format!(
                    "cursor {} has the retired v1 form, whose child tag can collide; {RESUME}",
                    echo(text)
                ),
            ));
        }
        let cursor = Cursor::fields(text).ok_or_else(damaged)?;
        // Only the canonical spelling with the right check is a cursor: this rejects a changed
        // check, `+`, upper case and padding in one comparison.
        if cursor.encode() != text {
            return Err(damaged());
        }
        Ok(cursor)
    }

    /// The fields of a v3 or v2 cursor text, its checks not yet compared.
    fn fields(text: &str) -> Option<Cursor> {
        let version = match text.get(..3) {
            Some("v3.") => Version::V3,
            Some("v2.") => Version::V2,
            _ => return None,
        };
        // The child id comes last: it may itself contain `.`.
        let parts = if version == Version::V3 { 6 } else { 5 };
        let mut fields = text[3..].splitn(parts - 1, '.');
        let seq = TurnSeq(u64::from_str_radix(fields.next()?, 16).ok()?);
        let turn = match version {
            Version::V3 => match fields.next()? {
                "0" => None,
                check => Some(u64::from_str_radix(check, 16).ok()?),
            },
            Version::V2 => None,
        };
        let seen = Seen::parse(fields.next()?, version)?;
        let _check = fields.next()?;
        let child = ChildId::new(fields.next()?).ok()?;
        // Section 5: a v3 cursor names a turn exactly when its seq is past 0.
        if version == Version::V3 && (seq.0 == 0) != turn.is_none() {
            return None;
        }
        Some(Cursor {
            child,
            seq,
            turn,
            seen,
            version,
        })
    }

    /// The cursor as text, the form handed to the caller. Same as `to_string()`.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Cursor};
    /// let start = Cursor::start(&ChildId::new("c")?);
    /// assert!(start.encode().starts_with("v3.0.0.0."));
    /// assert!(start.encode().ends_with(".c"));
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn encode(&self) -> String {
        //= spec/read.md#r7-opaque-cursor-typed-errors
        //# A cursor MUST be handed to the caller as text that encodes the child and the seq with a
        //# check (section 5); the caller MUST NOT need to understand it.
        let mut text = String::with_capacity(self.text_len());
        text.push_str(self.version.tag());
        text.push('.');
        let fields_at = text.len();
        push_hex(&mut text, self.seq.0, 1);
        if self.version == Version::V3 {
            text.push('.');
            match self.turn {
                None => text.push('0'),
                Some(check) => push_hex(&mut text, check, 16),
            }
        }
        text.push('.');
        Seen::push(&mut text, self.seen, self.version);
        // The check covers `parkline-cursor-<version> <fields, space-separated> <child>`.
        let mut check = crc32fast::Hasher::new();
        check.update(b"parkline-cursor-");
        check.update(self.version.tag().as_bytes());
        check.update(b" ");
        for field in text[fields_at..].split('.') {
            check.update(field.as_bytes());
            check.update(b" ");
        }
        check.update(self.child.as_str().as_bytes());
        text.push('.');
        push_hex(&mut text, u64::from(check.finalize()), 8);
        text.push('.');
        text.push_str(self.child.as_str());
        debug_assert_eq!(text.len(), self.text_len());
        text
    }

    /// The length of [`encode`](Cursor::encode)'s text, counted without writing it (the check is
    /// 8 hex digits whatever its value). Cursor text is ASCII, so this is also its characters.
    pub(super) fn text_len(&self) -> usize {
        Cursor::text_len_of(&self.child, self.seq, self.seen, self.version)
    }

    pub(super) fn text_len_of(
        child: &ChildId,
        seq: TurnSeq,
        seen: Option<Seen>,
        version: Version,
    ) -> usize {
        let turn = match (version, seq.0) {
            (Version::V2, _) => 0,
            (Version::V3, 0) => 2,
            (Version::V3, _) => 17,
        };
        version.tag().len()
            + 1
            + hex_digits(seq.0)
            + turn
            + 1
            + Seen::text_len(seen, version)
            + 1
            + 8
            + 1
            + child.as_str().len()
    }

    /// The cursor of `child` just after `turn`: a `since` read with it returns the turns with a
    /// greater seq, and is refused with `CursorDiverged` by a transcript whose turn at that seq
    /// has another id (section 5.2). For a daemon that knows which turn the caller holds last
    /// (see also `Transcript::cursor_after` and
    /// `Selector::SinceTurn`).
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{
    ///     ChildId, Cursor, ReadRequest, Selector, Transcript, TurnId, TurnRef, TurnSeq,
    /// };
    /// let mut child = Transcript::new(ChildId::new("c")?);
    /// child.push_turn(TurnId::new("t1")?, TurnSeq(1), "one")?;
    /// child.push_turn(TurnId::new("t2")?, TurnSeq(2), "two")?;
    /// let t1 = TurnRef { id: TurnId::new("t1")?, seq: TurnSeq(1) };
    /// let after = Cursor::after(child.child(), &t1);
    /// let window = child.read(&ReadRequest::new(Selector::Since(after), 1000))?;
    /// assert_eq!(window.whole.len(), 1);
    /// assert_eq!(window.whole[0].id.as_str(), "t2");
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn after(child: &ChildId, turn: &TurnRef) -> Self {
        //= spec/read.md#r16-resuming-from-a-known-turn-a-cursor-the-daemon-may-keep
        //# The crate MUST also offer that cursor itself (`Cursor::after(child, turn)`,
        //# `Transcript::cursor_after(id)`).
        let check = (turn.seq.0 > 0).then(|| turn_check(turn.id.as_str()));
        Cursor::at(child, turn.seq, check, None)
    }

    /// The sequence number of the last turn this cursor has passed (0: none). For the daemon's
    /// logs and tests; callers treat the cursor as opaque.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Cursor, TurnSeq};
    /// assert_eq!(Cursor::start(&ChildId::new("c")?).seq(), TurnSeq(0));
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn seq(&self) -> TurnSeq {
        self.seq
    }

    /// How many characters of the partial turn this cursor records as given (R15), if any.
    /// For the daemon's logs and tests; callers treat the cursor as opaque.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, ReadRequest, Selector, Transcript};
    /// let mut child = Transcript::new(ChildId::new("c")?);
    /// assert_eq!(child.start_cursor().partial_seen(), None);
    /// child.set_partial(Some("half".to_string()));
    /// let window = child.read(&ReadRequest::new(Selector::Since(child.start_cursor()), 500))?;
    /// assert_eq!(window.next.and_then(|c| c.partial_seen()), Some(4));
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn partial_seen(&self) -> Option<usize> {
        self.seen.map(|seen| seen.chars)
    }

    /// The child this cursor is a position of.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Cursor};
    /// let child = ChildId::new("s61947-8")?;
    /// assert_eq!(Cursor::start(&child).child(), &child);
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn child(&self) -> &ChildId {
        &self.child
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.encode())
    }
}

//= spec/read.md#r16-resuming-from-a-known-turn-a-cursor-the-daemon-may-keep
//# A cursor MUST round-trip through its text (`Display`/`FromStr`) and through serde (as that
//# text), and MUST read the same on a transcript rebuilt from the same turns (section 5), so the
//# daemon may keep it on the parent's behalf across a restart.
impl FromStr for Cursor {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        Cursor::parse(text)
    }
}

/// A cursor serialises as its text, so a daemon can keep it on the parent's behalf (in its own
/// state file, across restarts) in the form the caller would hand back.
impl serde::Serialize for Cursor {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Cursor {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Cursor::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// What a refused read carries: the cursor to resume with.
impl Error {
    /// For a refused read whose advice names a cursor: the cursor to resume following with,
    /// whole, so that a daemon keeping the parent's cursor need not parse the message. For
    /// [`ErrorKind::CursorAhead`] the cursor at the transcript's last turn; for
    /// [`ErrorKind::CursorDiverged`], [`ErrorKind::CursorOtherChild`] and for
    /// [`ErrorKind::UnknownTurn`] of a `since:turn:` read, the start cursor of the child read (for a caller that holds none of its turns).
    /// `None` for the other kinds: a damaged or retired cursor does not say which child or turn
    /// the caller holds (section 6 of spec/read.md).
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{
    ///     ChildId, Cursor, ReadRequest, Selector, Transcript, TurnId, TurnRef, TurnSeq,
    /// };
    /// let mut child = Transcript::new(ChildId::new("c")?);
    /// child.push_turn(TurnId::new("t1")?, TurnSeq(1), "one")?;
    /// let t9 = TurnRef { id: TurnId::new("t9")?, seq: TurnSeq(9) };
    /// let ahead = Cursor::after(child.child(), &t9);
    /// let err = child.read(&ReadRequest::new(Selector::Since(ahead), 1000)).unwrap_err();
    /// let resume = err.resume_cursor().expect("CursorAhead names the cursor to resume with");
    /// assert_eq!(resume.seq(), TurnSeq(1));
    /// assert!(child.read(&ReadRequest::new(Selector::Since(resume.clone()), 1000)).is_ok());
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn resume_cursor(&self) -> Option<&Cursor> {
        self.resume_detail()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The format the cursor text is specified in, spelled with `format!`.
    fn spelled(cursor: &Cursor) -> String {
        let (tag, width) = match cursor.version {
            Version::V2 => ("v2", 8),
            Version::V3 => ("v3", 16),
        };
        let seen = match cursor.seen {
            None => "0".to_string(),
            Some(s) => format!("{:x}-{:x}-{:0width$x}", s.chars, s.after.0, s.prefix),
        };
        let fields = match (cursor.version, cursor.turn) {
            (Version::V2, _) => format!("{:x} {seen}", cursor.seq.0),
            (Version::V3, None) => format!("{:x} 0 {seen}", cursor.seq.0),
            (Version::V3, Some(turn)) => format!("{:x} {turn:016x} {seen}", cursor.seq.0),
        };
        let check =
            crc32fast::hash(format!("parkline-cursor-{tag} {fields} {}", cursor.child).as_bytes());
        format!(
            "{tag}.{}.{check:08x}.{}",
            fields.replace(' ', "."),
            cursor.child
        )
    }

    #[test]
    fn the_written_cursor_is_the_specified_text_and_its_length_is_counted() {
        let seens = [
            None,
            Some(Seen {
                after: TurnSeq(0),
                chars: 1,
                prefix: 0,
            }),
            Some(Seen {
                after: TurnSeq(u64::MAX),
                chars: 0x1_0000,
                prefix: 0xdead_beef,
            }),
        ];
        for child in ["c", "s61947-8", "a.b_c"] {
            let child = ChildId::new(child).expect("valid id");
            for seq in [0, 1, 15, 16, 0xabc, u64::MAX] {
                for seen in seens {
                    let v2 = Cursor {
                        child: child.clone(),
                        seq: TurnSeq(seq),
                        turn: None,
                        seen,
                        version: Version::V2,
                    };
                    let turn = (seq > 0).then(|| turn_check(&format!("t{seq}")));
                    let v3 = Cursor::at(&child, TurnSeq(seq), turn, seen);
                    for cursor in [v2, v3] {
                        let text = cursor.encode();
                        assert_eq!(text, spelled(&cursor));
                        assert_eq!(cursor.text_len(), text.len());
                        assert_eq!(Cursor::parse(&text).ok(), Some(cursor));
                    }
                }
            }
        }
    }

    #[test]
    fn a_v3_cursor_names_a_turn_exactly_when_its_seq_is_past_0() {
        let child = ChildId::new("c").expect("valid id");
        let start = Cursor::start(&child);
        let named = Cursor {
            turn: Some(7),
            ..start.clone()
        };
        let at_1 = Cursor {
            seq: TurnSeq(1),
            ..start
        };
        for forged in [named, at_1] {
            let text = spelled(&forged);
            let err = Cursor::parse(&text).expect_err("no such cursor");
            assert_eq!(err.kind(), ErrorKind::CursorDamaged, "{text}");
        }
    }
}
