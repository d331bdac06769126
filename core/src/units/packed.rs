//! Long lists of small records as one run of bytes, for serde (the `wire` feature): the
//! playground's worker sends timelines of hundreds of thousands of ops, and a record at a
//! time through serde's generic calls cost more than the rest of a result together. A type
//! says how its record reads and writes ([`Packed`]); a field takes
//! `#[serde(with = "crate::units::packed")]`.

use serde::de::{Error, Visitor};
use serde::{Deserializer, Serializer};

/// A record of fixed size.
pub trait Packed: Sized {
    /// Its size in bytes.
    const SIZE: usize;
    /// Appends its bytes to `out`.
    fn put(&self, out: &mut Vec<u8>);
    /// Reads it from exactly [`Packed::SIZE`] bytes; `None` when they hold no such record.
    fn take(bytes: &[u8]) -> Option<Self>;
}

/// Writes `items` as one run of bytes.
///
/// # Errors
/// The serializer's.
pub fn serialize<S: Serializer, T: Packed>(items: &[T], s: S) -> Result<S::Ok, S::Error> {
    let mut out = Vec::with_capacity(items.len() * T::SIZE);
    for item in items {
        item.put(&mut out);
    }
    s.serialize_bytes(&out)
}

/// Reads what [`serialize`] wrote.
///
/// # Errors
/// A run whose length is no multiple of the record's size, or a record that does not read.
pub fn deserialize<'de, D: Deserializer<'de>, T: Packed>(d: D) -> Result<Vec<T>, D::Error> {
    d.deserialize_bytes(Records(std::marker::PhantomData))
}

struct Records<T>(std::marker::PhantomData<T>);

impl<T: Packed> Visitor<'_> for Records<T> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "records of {} bytes", T::SIZE)
    }

    fn visit_bytes<E: Error>(self, bytes: &[u8]) -> Result<Vec<T>, E> {
        if T::SIZE == 0 || bytes.len() % T::SIZE != 0 {
            return Err(E::custom(format!("{} bytes are no whole records of {}", bytes.len(), T::SIZE)));
        }
        bytes.chunks_exact(T::SIZE).map(|c| T::take(c).ok_or_else(|| E::custom("a record does not read"))).collect()
    }

    fn visit_byte_buf<E: Error>(self, bytes: Vec<u8>) -> Result<Vec<T>, E> {
        self.visit_bytes(&bytes)
    }
}

/// The `f64` at `bytes[at..at + 8]`, little-endian.
pub fn f64_at(bytes: &[u8], at: usize) -> Option<f64> {
    Some(f64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

/// The `u32` at `bytes[at..at + 4]`, little-endian.
pub fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

/// Lists of records (one per device), each one run of bytes:
/// `#[serde(with = "crate::units::packed::lists")]`.
pub mod lists {
    use serde::de::{SeqAccess, Visitor};
    use serde::ser::SerializeSeq;
    use serde::{Deserializer, Serializer};

    use super::Packed;

    /// A list's run of bytes, for serde.
    struct Run<'a, T>(&'a [T]);

    impl<T: Packed> serde::Serialize for Run<'_, T> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            super::serialize(self.0, s)
        }
    }

    /// Writes each list of `lists` as one run of bytes.
    ///
    /// # Errors
    /// The serializer's.
    pub fn serialize<S: Serializer, T: Packed>(lists: &[Vec<T>], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(lists.len()))?;
        for list in lists {
            seq.serialize_element(&Run(list))?;
        }
        seq.end()
    }

    /// One list read back.
    struct Back<T>(Vec<T>);

    impl<'de, T: Packed> serde::Deserialize<'de> for Back<T> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            super::deserialize(d).map(Back)
        }
    }

    /// Reads what [`serialize`] wrote.
    ///
    /// # Errors
    /// As [`super::deserialize`], for any list.
    pub fn deserialize<'de, D: Deserializer<'de>, T: Packed>(d: D) -> Result<Vec<Vec<T>>, D::Error> {
        struct Lists<T>(std::marker::PhantomData<T>);
        impl<'de, T: Packed> Visitor<'de> for Lists<T> {
            type Value = Vec<Vec<T>>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("lists of records")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Vec<T>>, A::Error> {
                // The count is the message's claim: reserve no more than a few.
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
                while let Some(Back(list)) = seq.next_element::<Back<T>>()? {
                    out.push(list);
                }
                Ok(out)
            }
        }
        d.deserialize_seq(Lists(std::marker::PhantomData))
    }
}
