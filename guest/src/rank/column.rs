//! Flat arrays of plain records, on the wire and in memory (the precomputed index of
//! §21.3.3, cached by the host and read back on every recall).
//!
//! Owns the wire form of the index's numeric tables ([`Flat`]: fixed-size little-endian
//! records, one byte string per table) and [`Column`], the table type that a decoded
//! index reads **in place** from the blob it was cached in. A cached index is read on
//! every recall; in a component each recall is a fresh instance, so decoding it used to
//! copy every table (postings, positions, trigrams, concepts: most of its bytes) a second
//! time into linear memory, and the slot reset after the call then rewrote those pages
//! too. A column decoded from a blob handed to [`decode`] instead points into that blob
//! (kept alive by an [`Arc`]) when its records are aligned there; [`encode`] pads each
//! table so that they are. Anything else (a blob from another encoder, a big-endian
//! machine, bytes not handed over) decodes to an owned copy, so the wire form stays
//! checked the same way and ranking reads the same slices either way.

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use serde::de::{DeserializeOwned, Error, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Fixed-size little-endian records, so the index's numeric arrays serialise as one byte
/// string each (postcard writes them with one copy and reads them with one tight loop,
/// instead of a varint and a visitor call per number).
pub trait Flat: Sized + Copy {
    const SIZE: usize;
    fn put(&self, out: &mut Vec<u8>);
    /// Decode from exactly `SIZE` bytes.
    fn get(b: &[u8]) -> Self;
    /// Decode a whole array (`b.len()` a multiple of `SIZE`).
    fn get_all(b: &[u8]) -> Vec<Self> {
        b.chunks_exact(Self::SIZE).map(Self::get).collect()
    }
}

#[inline(always)]
pub(crate) fn le4(b: &[u8], at: usize) -> [u8; 4] {
    // Plain byte loads: `copy_from_slice` is an out-of-line call at opt-level "s".
    [b[at], b[at + 1], b[at + 2], b[at + 3]]
}

impl Flat for u8 {
    const SIZE: usize = 1;
    fn put(&self, out: &mut Vec<u8>) {
        out.push(*self);
    }
    #[inline(always)]
    fn get(b: &[u8]) -> Self {
        b[0]
    }
    fn get_all(b: &[u8]) -> Vec<Self> {
        b.to_vec()
    }
}

impl Flat for u32 {
    const SIZE: usize = 4;
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    #[inline(always)]
    fn get(b: &[u8]) -> Self {
        u32::from_le_bytes(le4(b, 0))
    }
    fn get_all(b: &[u8]) -> Vec<Self> {
        copy_records(b)
    }
}

impl Flat for u64 {
    const SIZE: usize = 8;
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    #[inline(always)]
    fn get(b: &[u8]) -> Self {
        u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    }
    fn get_all(b: &[u8]) -> Vec<Self> {
        copy_records(b)
    }
}

impl<const N: usize> Flat for [u32; N] {
    const SIZE: usize = 4 * N;
    fn put(&self, out: &mut Vec<u8>) {
        for x in self {
            x.put(out);
        }
    }
    #[inline(always)]
    fn get(b: &[u8]) -> Self {
        let mut a = [0u32; N];
        for (i, x) in a.iter_mut().enumerate() {
            *x = u32::from_le_bytes(le4(b, 4 * i));
        }
        a
    }
    fn get_all(b: &[u8]) -> Vec<Self> {
        copy_records(b)
    }
}

/// A flat array of plain records decoded with one copy of its wire bytes: on a
/// little-endian machine a [`bytemuck::Pod`] record's memory is exactly its wire form, so
/// the decode is a `memcpy` (in a component, one `memory.copy`, run by the host at the
/// host's speed, where a record-by-record loop is compiled by Cranelift). Each value is
/// written once (no zero-fill first). `b.len()` is a multiple of the record size.
pub(crate) fn copy_records<T: Flat + bytemuck::Pod>(b: &[u8]) -> Vec<T> {
    let n = b.len() / T::SIZE;
    if !in_memory_form::<T>() {
        return b.chunks_exact(T::SIZE).map(T::get).collect();
    }
    let mut v = Vec::<T>::with_capacity(n);
    // SAFETY: `v` has room for `n` records of `T::SIZE == size_of::<T>()` bytes, which
    // `b` holds (`n * T::SIZE <= b.len()`); the regions are distinct allocations; any
    // bytes are a valid `T` (`Pod`), so the first `n` records are initialised.
    unsafe {
        std::ptr::copy_nonoverlapping(b.as_ptr(), v.as_mut_ptr().cast::<u8>(), n * T::SIZE);
        v.set_len(n);
    }
    v
}

/// Whether `T`'s wire bytes are its memory (little-endian, no padding).
fn in_memory_form<T: Flat>() -> bool {
    cfg!(target_endian = "little") && std::mem::size_of::<T>() == T::SIZE
}

/// `#[serde(with = "flat")]` for `Vec<T: Flat>`: one byte string on the wire (small
/// tables decoded as owned copies; an index's tables are [`Column`]s).
pub mod flat {
    use super::Flat;
    use serde::de::{Error, Visitor};
    use serde::{Deserializer, Serializer};

    pub fn serialize<T: Flat, S: Serializer>(v: &[T], s: S) -> Result<S::Ok, S::Error> {
        let mut out = Vec::with_capacity(v.len() * T::SIZE);
        for x in v {
            x.put(&mut out);
        }
        s.serialize_bytes(&out)
    }

    struct V<T>(std::marker::PhantomData<T>);

    impl<T: Flat> Visitor<'_> for V<T> {
        type Value = Vec<T>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(f, "a byte string of {}-byte records", T::SIZE)
        }
        fn visit_bytes<E: Error>(self, b: &[u8]) -> Result<Vec<T>, E> {
            if !b.len().is_multiple_of(T::SIZE) {
                return Err(E::custom("flat array length is not a multiple of its record size"));
            }
            Ok(T::get_all(b))
        }
    }

    pub fn deserialize<'de, T: Flat, D: Deserializer<'de>>(d: D) -> Result<Vec<T>, D::Error> {
        d.deserialize_bytes(V(std::marker::PhantomData))
    }
}

/// A cached blob that columns decoded from it share.
pub type Blob = Arc<Vec<u8>>;

thread_local! {
    /// The blob [`decode`] is reading: columns whose bytes lie in it (aligned) point there.
    static SOURCE: RefCell<Option<Blob>> = const { RefCell::new(None) };
    /// While [`encode`] runs: how many bytes it has written, so a column can pad itself.
    static WRITTEN: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Restores the thread's previous [`SOURCE`] / [`WRITTEN`] when dropped (so a nested or
/// unwinding call leaves no stale state behind).
struct Restore {
    source: Option<Option<Blob>>,
    written: Option<Option<usize>>,
}

impl Drop for Restore {
    fn drop(&mut self) {
        if let Some(s) = self.source.take() {
            SOURCE.with(|c| *c.borrow_mut() = s);
        }
        if let Some(w) = self.written.take() {
            WRITTEN.with(|c| c.set(w));
        }
    }
}

/// Decode a cached blob (postcard) whose columns are read in place where they can be:
/// `read` is given the blob's bytes (to take a prefix first, say) and its columns then
/// share `blob`. `None` when `read` finds no value.
pub fn decode_with<R>(blob: Vec<u8>, read: impl FnOnce(&[u8]) -> Option<R>) -> Option<R> {
    let blob: Blob = Arc::new(blob);
    let _restore = Restore { source: Some(SOURCE.with(|c| c.replace(Some(blob.clone())))), written: None };
    read(&blob)
}

/// [`decode_with`] of one whole postcard value.
pub fn decode<T: DeserializeOwned>(blob: Vec<u8>) -> Option<T> {
    decode_with(blob, |b| postcard::from_bytes(b).ok())
}

/// Encode (postcard) so that [`decode`] reads each column in place: every column's
/// records start at a multiple of their alignment from the blob's start. Deterministic:
/// the padding depends only on what precedes the column.
pub fn encode<T: Serialize + ?Sized>(value: &T) -> Option<Vec<u8>> {
    let _restore = Restore { source: None, written: Some(WRITTEN.with(|c| c.replace(Some(0)))) };
    postcard::serialize_with_flavor(value, Counted(Vec::new())).ok()
}

/// A postcard output that tells [`WRITTEN`] its length.
struct Counted(Vec<u8>);

impl postcard::ser_flavors::Flavor for Counted {
    type Output = Vec<u8>;
    fn try_push(&mut self, b: u8) -> postcard::Result<()> {
        self.0.push(b);
        WRITTEN.with(|c| c.set(Some(self.0.len())));
        Ok(())
    }
    fn try_extend(&mut self, b: &[u8]) -> postcard::Result<()> {
        self.0.extend_from_slice(b);
        WRITTEN.with(|c| c.set(Some(self.0.len())));
        Ok(())
    }
    fn finalize(self) -> postcard::Result<Vec<u8>> {
        Ok(self.0)
    }
}

/// Bytes of postcard's length prefix for a byte string of `n` bytes (a LEB128 varint).
fn varint_len(n: usize) -> usize {
    let mut len = 1;
    let mut n = n >> 7;
    while n > 0 {
        len += 1;
        n >>= 7;
    }
    len
}

/// Most pad bytes a column's wire form may start with.
const MAX_PAD: usize = 7;

/// A table of plain records that derefs to `&[T]`: either its own `Vec` or a slice of the
/// cached blob it was decoded from ([`decode`]). Immutable once made.
///
/// On the wire: one byte string `[p][p zero bytes][records]`, `p <= 7` chosen by
/// [`encode`] so that the records are aligned in the blob.
pub struct Column<T: Flat + bytemuck::Pod> {
    ptr: *const T,
    len: usize,
    /// What `ptr` points into; never mutated while the column lives.
    _owner: Owner<T>,
}

enum Owner<T> {
    Vec(Vec<T>),
    Blob(Blob),
}

impl<T> Default for Owner<T> {
    fn default() -> Owner<T> {
        Owner::Vec(Vec::new())
    }
}

// SAFETY: a column is an immutable view of memory its owner (a `Vec<T>` or an
// `Arc<Vec<u8>>`, both `Send + Sync` for `T: Send + Sync`) holds and never changes.
unsafe impl<T: Flat + bytemuck::Pod + Send + Sync> Send for Column<T> {}
unsafe impl<T: Flat + bytemuck::Pod + Send + Sync> Sync for Column<T> {}

impl<T: Flat + bytemuck::Pod> Column<T> {
    /// A column over `data` (the records' wire bytes, `len` a multiple of `T::SIZE`):
    /// in place when `data` lies in the blob being decoded and is aligned for `T`, an
    /// owned copy otherwise.
    fn read(data: &[u8]) -> Column<T> {
        let aligned = (data.as_ptr() as usize).is_multiple_of(std::mem::align_of::<T>());
        if in_memory_form::<T>() && aligned {
            let shared = SOURCE.with(|c| {
                c.borrow().as_ref().filter(|src| {
                    let (lo, hi) = (src.as_ptr() as usize, src.as_ptr() as usize + src.len());
                    let (a, b) = (data.as_ptr() as usize, data.as_ptr() as usize + data.len());
                    lo <= a && b <= hi
                }).cloned()
            });
            if let Some(src) = shared {
                // SAFETY: `data` lies in `src`'s buffer (checked above), which the column
                // keeps alive and nobody mutates (it is shared only through `Arc`s);
                // it is aligned for `T` and holds `len` records of `size_of::<T>()` bytes
                // (`in_memory_form`), any bytes of which are a valid `T` (`Pod`).
                return Column { ptr: data.as_ptr().cast::<T>(), len: data.len() / T::SIZE, _owner: Owner::Blob(src) };
            }
        }
        Column::from(T::get_all(data))
    }

    /// Change the records (a shared column is copied first): for building and tests.
    pub fn edit(&mut self, f: impl FnOnce(&mut Vec<T>)) {
        let mut v = match std::mem::take(&mut self._owner) {
            Owner::Vec(v) => v,
            Owner::Blob(_) => self.to_vec(),
        };
        f(&mut v);
        *self = Column::from(v);
    }

    /// Whether the column reads its records in place in a cached blob.
    pub fn is_shared(&self) -> bool {
        matches!(self._owner, Owner::Blob(_))
    }
}

impl<T: Flat + bytemuck::Pod> From<Vec<T>> for Column<T> {
    fn from(v: Vec<T>) -> Column<T> {
        Column { ptr: v.as_ptr(), len: v.len(), _owner: Owner::Vec(v) }
    }
}

impl<T: Flat + bytemuck::Pod> FromIterator<T> for Column<T> {
    fn from_iter<I: IntoIterator<Item = T>>(it: I) -> Column<T> {
        Column::from(it.into_iter().collect::<Vec<T>>())
    }
}

impl<T: Flat + bytemuck::Pod> std::ops::Deref for Column<T> {
    type Target = [T];
    #[inline(always)]
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` and `len` describe records that `_owner` holds, initialised and
        // aligned ([`Column::read`], [`Column::from`]); the owner is never mutated.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// Copy on write: a shared column becomes an owned copy first (for tests that corrupt an
/// index; ranking never writes).
impl<T: Flat + bytemuck::Pod> std::ops::DerefMut for Column<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        if let Owner::Blob(_) = self._owner {
            *self = Column::from(self.to_vec());
        }
        match &mut self._owner {
            Owner::Vec(v) => v,
            Owner::Blob(_) => &mut [],
        }
    }
}

impl<T: Flat + bytemuck::Pod> Default for Column<T> {
    fn default() -> Column<T> {
        Column::from(Vec::new())
    }
}

impl<T: Flat + bytemuck::Pod> Clone for Column<T> {
    fn clone(&self) -> Column<T> {
        match &self._owner {
            Owner::Vec(v) => Column::from(v.clone()),
            Owner::Blob(b) => Column { ptr: self.ptr, len: self.len, _owner: Owner::Blob(b.clone()) },
        }
    }
}

impl<T: Flat + bytemuck::Pod + PartialEq> PartialEq for Column<T> {
    fn eq(&self, other: &Column<T>) -> bool {
        **self == **other
    }
}

impl<T: Flat + bytemuck::Pod + std::fmt::Debug> std::fmt::Debug for Column<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

impl<T: Flat + bytemuck::Pod> Serialize for Column<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let body = self.len * T::SIZE;
        // where the records land for `p` pad bytes: after postcard's length prefix, the
        // pad count and the pad
        let pad = match WRITTEN.with(Cell::get) {
            Some(at) => (0..=MAX_PAD).find(|&p| (at + varint_len(1 + p + body) + 1 + p).is_multiple_of(std::mem::align_of::<T>())).unwrap_or(0),
            None => 0,
        };
        let mut out = Vec::with_capacity(1 + pad + body);
        out.push(pad as u8);
        out.resize(1 + pad, 0);
        for x in self.iter() {
            x.put(&mut out);
        }
        s.serialize_bytes(&out)
    }
}

/// The records of a column's wire bytes (past its pad), or why they are not.
fn records<T: Flat>(b: &[u8]) -> Result<&[u8], &'static str> {
    let (&p, rest) = b.split_first().ok_or("a column has no pad count")?;
    let data = rest.get(p as usize..).filter(|_| p as usize <= MAX_PAD).ok_or("a column's pad is too long")?;
    if !data.len().is_multiple_of(T::SIZE) {
        return Err("flat array length is not a multiple of its record size");
    }
    Ok(data)
}

struct ColumnVisitor<T>(std::marker::PhantomData<T>);

impl<'de, T: Flat + bytemuck::Pod> Visitor<'de> for ColumnVisitor<T> {
    type Value = Column<T>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "a padded byte string of {}-byte records", T::SIZE)
    }
    fn visit_borrowed_bytes<E: Error>(self, b: &'de [u8]) -> Result<Column<T>, E> {
        records::<T>(b).map(Column::read).map_err(E::custom)
    }
    fn visit_bytes<E: Error>(self, b: &[u8]) -> Result<Column<T>, E> {
        records::<T>(b).map(|d| Column::from(T::get_all(d))).map_err(E::custom)
    }
}

impl<'de, T: Flat + bytemuck::Pod> Deserialize<'de> for Column<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Column<T>, D::Error> {
        d.deserialize_bytes(ColumnVisitor(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Tables {
        tag: String,
        words: Column<u32>,
        keys: Column<u64>,
        bytes: Column<u8>,
        rows: Column<[u32; 3]>,
    }

    fn tables(tag: &str) -> Tables {
        Tables {
            tag: tag.to_string(),
            words: (0..20u32).map(|x| x * 7).collect(),
            keys: vec![u64::MAX, 3, 1 << 40].into(),
            bytes: vec![1u8, 2, 3].into(),
            rows: vec![[1, 2, 3], [4, 5, 6]].into(),
        }
    }

    #[test]
    fn an_encoded_blob_decodes_to_the_same_tables_read_in_place() {
        // tags of every length mod 8 move every column to every offset mod 8
        for n in 0..9 {
            let t = tables(&"x".repeat(n));
            let blob = encode(&t).expect("encodes");
            assert_eq!(encode(&t), Some(blob.clone()), "deterministic");
            let back: Tables = decode(blob.clone()).expect("decodes");
            assert_eq!(back, t);
            if cfg!(target_endian = "little") {
                assert!(back.words.is_shared() && back.keys.is_shared() && back.bytes.is_shared() && back.rows.is_shared(), "tag {n}: every column in place");
            }
            // the same bytes decoded without handing the blob over: owned copies, equal
            let copied: Tables = postcard::from_bytes(&blob).expect("decodes");
            assert_eq!(copied, t);
            assert!(!copied.words.is_shared());
            // a clone of a shared column is equal and outlives the decoded value
            let words = back.words.clone();
            drop(back);
            assert_eq!(words, t.words);
        }
    }

    #[test]
    fn a_column_not_aligned_in_its_blob_is_copied_not_misread() {
        let t = tables("abc");
        let blob = postcard::to_allocvec(&t).expect("encodes"); // no padding computed
        for shift in 0..4 {
            let mut shifted = vec![0u8; shift];
            shifted.extend_from_slice(&blob);
            let back = decode_with(shifted, |b| postcard::from_bytes::<Tables>(&b[shift..]).ok()).expect("decodes");
            assert_eq!(back, t, "shift {shift}");
        }
    }

    #[test]
    fn bad_column_bytes_are_errors() {
        let t = tables("abc");
        let blob = encode(&t).expect("encodes");
        let tag_end = 1 + 3;
        // the words column: its length prefix (1 byte), then its pad count
        let mut bad = blob.clone();
        bad[tag_end + 1] = 8;
        assert!(decode::<Tables>(bad).is_none(), "pad count over 7");
        let mut short = blob.clone();
        short[tag_end] -= 1;
        assert!(decode::<Tables>(short).is_none(), "records cut mid-record");
        assert!(decode::<Tables>(blob[..blob.len() - 1].to_vec()).is_none(), "truncated");
        assert!(decode::<Tables>(Vec::new()).is_none());
    }

    /// A column of 128 bytes or more has a length prefix of two or more bytes, which the
    /// padding [`encode`] chooses must allow for: its records are still aligned, so read in
    /// place, at every offset the fields before it leave.
    #[test]
    fn a_column_with_a_long_length_prefix_is_read_in_place_too() {
        #[derive(Debug, PartialEq, Serialize, Deserialize)]
        struct Long {
            tag: String,
            // 124 bytes of records: with a pad of 3 or more its wire form is 128 bytes or more
            edge: Column<u32>,
            keys: Column<u64>,
            words: Column<u32>,
            rows: Column<[u32; 3]>,
        }
        for n in 0..9 {
            let t = Long {
                tag: "x".repeat(n),
                edge: (0..31u32).collect(),
                keys: (0..40u64).map(|x| x << 33 | x).collect(),
                words: (0..5000u32).collect(),
                rows: (0..30u32).map(|x| [x, x + 1, x + 2]).collect(),
            };
            let back: Long = decode(encode(&t).expect("encodes")).expect("decodes");
            assert_eq!(back, t);
            if cfg!(target_endian = "little") {
                assert!(back.edge.is_shared() && back.keys.is_shared() && back.words.is_shared() && back.rows.is_shared(), "tag {n}: every column in place");
            }
        }
    }

    /// Outside [`encode`] a column is written with no padding, also after an [`encode`] on
    /// the same thread (which must leave no state behind).
    #[test]
    fn a_column_is_written_unpadded_outside_encode() {
        let col: Column<u32> = vec![1, 2].into();
        let plain = [9u8, 0, 1, 0, 0, 0, 2, 0, 0, 0];
        assert_eq!(postcard::to_allocvec(&col).expect("encodes"), plain);
        for n in 0..8 {
            encode(&("x".repeat(n), &col)).expect("encodes");
            assert_eq!(postcard::to_allocvec(&col).expect("encodes"), plain, "after encoding behind a tag of {n}");
        }
    }

    /// Only bytes of the blob being decoded are read in place: a column read from other
    /// bytes while a blob is decoded is an owned copy (it would otherwise point into memory
    /// nothing keeps alive).
    #[test]
    fn bytes_outside_the_blob_being_decoded_are_copied() {
        let t = tables("abcd");
        let other = encode(&t).expect("encodes");
        let blob = encode(&tables("efgh")).expect("encodes");
        let back = decode_with(blob, |_| postcard::from_bytes::<Tables>(&other).ok()).expect("decodes");
        assert_eq!(back, t);
        assert!(!back.words.is_shared() && !back.keys.is_shared() && !back.bytes.is_shared() && !back.rows.is_shared());
        // the other bytes allocated after the blob (so, as a rule, just past it in memory)
        let blob = encode(&tables("efgh")).expect("encodes");
        let back = decode_with(blob, |_| {
            let after = encode(&t).expect("encodes");
            postcard::from_bytes::<Tables>(&after).ok().map(|x| (x.words.is_shared() || x.keys.is_shared() || x.rows.is_shared(), x.words.to_vec()))
        });
        assert_eq!(back, Some((false, t.words.to_vec())));
        // and columns of other records are other columns
        assert_ne!(t.words, tables("abcd").words.iter().map(|x| x + 1).collect::<Column<u32>>());
    }

    /// A deserializer that hands over transient bytes (not borrowed from its input) gets an
    /// owned copy of the same records, for a [`Column`] and for a [`flat`] array, and the
    /// same errors.
    #[test]
    fn a_column_from_transient_bytes_is_an_owned_copy() {
        use serde::de::value::{BytesDeserializer, Error as E};
        let wire = [2u8, 0, 0, 7, 0, 0, 0, 9, 0, 0, 0];
        let col = Column::<u32>::deserialize(BytesDeserializer::<E>::new(&wire)).expect("decodes");
        assert_eq!(&col[..], [7, 9]);
        assert!(!col.is_shared());
        assert!(Column::<u32>::deserialize(BytesDeserializer::<E>::new(&wire[..10])).is_err(), "cut mid-record");
        assert!(Column::<u32>::deserialize(BytesDeserializer::<E>::new(&[8u8, 0, 0, 0, 0, 0, 0, 0, 0])).is_err(), "pad count over 7");
        let flat: Vec<[u32; 2]> = flat::deserialize(BytesDeserializer::<E>::new(&wire[3..])).expect("decodes");
        assert_eq!(flat, [[7, 9]]);
        assert!(flat::deserialize::<u32, _>(BytesDeserializer::<E>::new(&wire[3..10])).is_err(), "cut mid-record");
    }

    /// A column decoded in place is copied before it is changed ([`Column::edit`], `DerefMut`):
    /// the change is the copy's, and a column still sharing the blob keeps its records.
    #[test]
    fn changing_a_shared_column_changes_a_copy() {
        let t = tables("ab");
        let back: Tables = decode(encode(&t).expect("encodes")).expect("decodes");
        let (mut words, mut keys, shared) = (back.words.clone(), back.keys.clone(), back.words.clone());
        words.edit(|v| v.push(1000));
        keys[0] = 5;
        assert!(!words.is_shared() && !keys.is_shared());
        assert_eq!(words.len(), t.words.len() + 1);
        assert_eq!(words.last(), Some(&1000));
        assert_eq!(&words[..t.words.len()], &t.words[..]);
        assert_eq!(keys[0], 5);
        assert_eq!(&keys[1..], &t.keys[1..]);
        assert_eq!(shared, t.words);
        assert_eq!(back.keys, t.keys);
        // a column is shown as its records are
        assert_eq!(format!("{words:?}"), format!("{:?}", &words[..]));
    }

    /// Each record type reads from and writes to its little-endian bytes record by record
    /// ([`Flat::get`], [`Flat::put`]): the path a machine whose memory is not the wire form
    /// (big-endian) decodes every column by, which a little-endian run never takes otherwise.
    #[test]
    fn each_record_type_reads_its_little_endian_bytes() {
        let b: Vec<u8> = (1..=12).collect();
        assert_eq!(<u8 as Flat>::get(&b[2..]), 3);
        assert_eq!(<u32 as Flat>::get(&b), 0x0403_0201);
        assert_eq!(<u64 as Flat>::get(&b), 0x0807_0605_0403_0201);
        assert_eq!(<[u32; 3] as Flat>::get(&b), [0x0403_0201, 0x0807_0605, 0x0c0b_0a09]);
        assert_eq!(le4(&b, 5), [6, 7, 8, 9]);
        let mut out = Vec::new();
        7u8.put(&mut out);
        0x0403_0201u32.put(&mut out);
        0x0807_0605_0403_0201u64.put(&mut out);
        [1u32, 2].put(&mut out);
        assert_eq!(out, [7, 1, 2, 3, 4, 1, 2, 3, 4, 5, 6, 7, 8, 1, 0, 0, 0, 2, 0, 0, 0]);
    }

    /// [`encode`] writes every postcard value, not only columns: single bytes (a `bool`, a
    /// `u8`, an `Option`'s tag) as well as runs, and [`decode`] reads them back.
    #[test]
    fn encode_writes_single_bytes_as_well_as_runs() {
        let v = (true, 7u8, Some(300u32), None::<u8>, Column::<u32>::from(vec![1, 2]));
        let back: (bool, u8, Option<u32>, Option<u8>, Column<u32>) = decode(encode(&v).expect("encodes")).expect("decodes");
        assert_eq!(back, v);
    }

    /// A value of another type where a column or a flat array is expected is refused with
    /// an error that says what was expected.
    #[test]
    fn a_value_of_another_type_is_refused_saying_what_was_expected() {
        let err = Column::<u32>::deserialize(&mut serde_json::Deserializer::from_str("5")).expect_err("not bytes").to_string();
        assert!(err.contains("a padded byte string of 4-byte records"), "{err}");
        let err = flat::deserialize::<u64, _>(&mut serde_json::Deserializer::from_str("5")).expect_err("not bytes").to_string();
        assert!(err.contains("a byte string of 8-byte records"), "{err}");
    }
}
