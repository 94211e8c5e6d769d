//! The short label of an iteration's first axis (`TILE up`), held inline.
//!
//! A facts row is read for every iteration at every tick; a label on the
//! heap made each of those rows an allocation (and every copy of the table
//! ten thousand more). Inline, a row is plain bytes and `Fact` is `Copy`.

/// Bytes of the first axis's label a row keeps: the folded falsified list
/// names directions, never more than a short label.
pub(crate) const AXIS_BYTES: usize = 48;

/// A UTF-8 label of at most [`AXIS_BYTES`] bytes, cut at a character.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Axis {
    len: u8,
    bytes: [u8; AXIS_BYTES],
}

impl Axis {
    /// `s`, cut to [`AXIS_BYTES`] at a character boundary.
    pub fn new(s: &str) -> Axis {
        let mut end = s.len().min(AXIS_BYTES);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        let mut bytes = [0; AXIS_BYTES];
        bytes[..end].copy_from_slice(&s.as_bytes()[..end]);
        Axis {
            len: end as u8,
            bytes,
        }
    }

    /// The label stored as `bytes` (a row's), or `None` when they are too
    /// long or not UTF-8: a damaged row.
    pub fn from_bytes(bytes: &[u8]) -> Option<Axis> {
        let s = std::str::from_utf8(bytes).ok()?;
        (s.len() <= AXIS_BYTES).then(|| Axis::new(s))
    }

    pub fn as_str(&self) -> &str {
        // Only `new` fills `bytes`, with a prefix of a `str` cut at a
        // character boundary.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }
}

impl Default for Axis {
    fn default() -> Axis {
        Axis::new("")
    }
}

impl std::fmt::Debug for Axis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl std::fmt::Display for Axis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_label_is_cut_at_a_character() {
        let long = "é".repeat(AXIS_BYTES);
        let a = Axis::new(&long);
        assert_eq!(a.as_str(), "é".repeat(AXIS_BYTES / 2));
        let odd = format!("x{long}");
        assert_eq!(Axis::new(&odd).as_str().len(), AXIS_BYTES - 1);
        assert_eq!(Axis::new("TILE up").as_str(), "TILE up");
    }

    #[test]
    fn bytes_that_are_no_label_are_refused() {
        assert_eq!(Axis::from_bytes(b"TILE up").unwrap().as_str(), "TILE up");
        assert!(Axis::from_bytes(&[0xff, 0xfe]).is_none());
        assert!(Axis::from_bytes(&[b'a'; AXIS_BYTES + 1]).is_none());
    }
}
