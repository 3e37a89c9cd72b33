//! [`Line`], the text of a parked completion line: immutable and shared, so the parked list, the
//! in-flight batch and the batch `boundary` returns hold one copy of it between them.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A completion line, verbatim, without `\n` (D3). It reads as a `str` (`Deref`, `as_str`,
/// comparisons with `str` and `String` both ways, `Display`, and `Debug` as a string), and
/// serialises as one. A clone shares the text: it costs a reference count, not a copy, which is
/// what keeps a 10,000-line boundary from copying 10,000 lines into the batch it returns.
///
/// # Example
///
/// ```
/// use parkline::Line;
/// let line = Line::from("req 7 done");
/// let copy = line.clone();
/// assert_eq!(copy, "req 7 done");
/// assert_eq!(copy.len(), 10);
/// assert!(std::ptr::eq(line.as_str(), copy.as_str())); // shared, not copied
/// ```
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Line(Arc<str>);

impl Line {
    /// The line's text.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::Line;
    /// assert_eq!(Line::from(String::from("ok")).as_str(), "ok");
    /// ```
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Deref for Line {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Line {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Line {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Line {
    fn from(text: &str) -> Self {
        Line(Arc::from(text))
    }
}

impl From<String> for Line {
    fn from(text: String) -> Self {
        Line(Arc::from(text))
    }
}

impl From<Line> for String {
    fn from(line: Line) -> Self {
        line.as_str().to_owned()
    }
}

impl fmt::Debug for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl Serialize for Line {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Line {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct LineVisitor;

        impl Visitor<'_> for LineVisitor {
            type Value = Line;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            // One allocation, at the text's length, whether the text is borrowed or owned.
            fn visit_str<E: de::Error>(self, text: &str) -> Result<Line, E> {
                Ok(Line::from(text))
            }
        }

        deserializer.deserialize_str(LineVisitor)
    }
}

macro_rules! compare_with {
    ($($other:ty),*) => {$(
        impl PartialEq<$other> for Line {
            fn eq(&self, other: &$other) -> bool {
                self.as_str() == AsRef::<str>::as_ref(other)
            }
        }

        impl PartialEq<Line> for $other {
            fn eq(&self, other: &Line) -> bool {
                AsRef::<str>::as_ref(self) == other.as_str()
            }
        }
    )*};
}

compare_with!(str, &str, String);

#[cfg(test)]
mod tests {
    use super::Line;

    #[test]
    fn a_line_compares_with_str_and_string_both_ways() {
        let line = Line::from("abc");
        for (text, equal) in [
            ("abc", true),
            ("abd", false),
            ("ab", false),
            ("abcd", false),
        ] {
            let owned = text.to_owned();
            assert_eq!(<Line as PartialEq<str>>::eq(&line, text), equal);
            assert_eq!(<str as PartialEq<Line>>::eq(text, &line), equal);
            assert_eq!(<Line as PartialEq<&str>>::eq(&line, &text), equal);
            assert_eq!(<&str as PartialEq<Line>>::eq(&text, &line), equal);
            assert_eq!(<Line as PartialEq<String>>::eq(&line, &owned), equal);
            assert_eq!(<String as PartialEq<Line>>::eq(&owned, &line), equal);
            assert_eq!(line.eq(&Line::from(text)), equal);
        }
        assert_eq!(
            Line::from("a").cmp(&Line::from("b")),
            std::cmp::Ordering::Less
        );
    }

    #[test]
    fn a_line_reads_and_prints_as_its_text() {
        let line = Line::from("say \"hi\"");
        assert_eq!(format!("{line}"), "say \"hi\"");
        assert_eq!(format!("{line:?}"), format!("{:?}", "say \"hi\""));
        assert_eq!(&*line, "say \"hi\"");
        assert_eq!(line.as_ref() as &str, "say \"hi\"");
        assert_eq!(std::borrow::Borrow::<str>::borrow(&line), "say \"hi\"");
        assert_eq!(String::from(line.clone()), "say \"hi\"");
        assert_eq!(serde_json::to_string(&line).unwrap(), r#""say \"hi\"""#);
        let back: Line = serde_json::from_str(r#""say \"hi\"""#).unwrap();
        assert_eq!(back, line);
    }

    #[test]
    fn a_clone_shares_the_text() {
        let line = Line::from("x".repeat(100));
        let copy = line.clone();
        assert!(std::ptr::eq(line.as_str(), copy.as_str()));
        let other = Line::from(line.as_str());
        assert!(!std::ptr::eq(line.as_str(), other.as_str()));
    }
}
