//! A byte buffer for large, randomly probed in-memory structures (a
//! PlainTable's hash index and bloom filter): from `HUGE_MIN` bytes up it
//! lives in an anonymous mapping advised to be backed by transparent huge
//! pages, so random probes over megabytes cost no TLB miss each (with
//! 4 KiB pages a 5 MiB index spans 1,280 pages, more than a core's
//! second-level TLB holds alongside everything else). Smaller buffers,
//! and platforms without such mappings, use the heap.
//!
//! Invariant: `len()` is the length asked for; a mapping's extra bytes
//! (rounded up to whole huge pages) are never exposed.

use std::ops::{Deref, DerefMut};

/// Buffers at least this large go to a huge-page mapping.
pub const HUGE_MIN: usize = 1 << 20;
const HUGE_PAGE: usize = 2 << 20;

pub enum HugeBytes {
    Heap(Vec<u8>),
    Mapped { map: memmap2::MmapMut, len: usize },
}

impl HugeBytes {
    /// `len` zero bytes.
    pub fn zeroed(len: usize) -> HugeBytes {
        match map(len) {
            Some(map) => HugeBytes::Mapped { map, len },
            None => HugeBytes::Heap(vec![0; len]),
        }
    }

    /// `v`'s bytes, moved to a huge-page mapping when large enough.
    pub fn from_vec(v: Vec<u8>) -> HugeBytes {
        match map(v.len()) {
            Some(mut map) => {
                map[..v.len()].copy_from_slice(&v);
                HugeBytes::Mapped { map, len: v.len() }
            }
            None => HugeBytes::Heap(v),
        }
    }

    /// Whether the bytes live in a huge-page mapping.
    pub fn is_mapped(&self) -> bool {
        matches!(self, HugeBytes::Mapped { .. })
    }
}

/// A mapping for `len` bytes (whole huge pages), if `len` is large
/// enough to be worth one.
fn map(len: usize) -> Option<memmap2::MmapMut> {
    if len < HUGE_MIN {
        return None;
    }
    map_huge(len.checked_next_multiple_of(HUGE_PAGE)?)
}

/// A zero-filled anonymous mapping of `size` bytes advised to be backed by
/// transparent huge pages (Linux; kernels since 6.7 align anonymous
/// mappings of whole huge pages, so a 2 MiB block is one page). `None`
/// where mapping is not available or fails: the caller allocates from the
/// heap instead.
pub fn map_huge(size: usize) -> Option<memmap2::MmapMut> {
    map_anon(size, true)
}

/// A zero-filled anonymous mapping of `size` bytes advised for (`huge`)
/// or against transparent huge pages; `None` as for [`map_huge`].
#[cfg(all(target_os = "linux", not(loom), not(miri)))]
pub fn map_anon(size: usize, huge: bool) -> Option<memmap2::MmapMut> {
    let m = memmap2::MmapOptions::new().len(size).map_anon().ok()?;
    // Advice only: without transparent huge pages the mapping is still
    // plain zeroed memory.
    let _ = m.advise(if huge {
        memmap2::Advice::HugePage
    } else {
        memmap2::Advice::NoHugePage
    });
    Some(m)
}

#[cfg(not(all(target_os = "linux", not(loom), not(miri))))]
pub fn map_anon(_size: usize, _huge: bool) -> Option<memmap2::MmapMut> {
    None
}

impl Deref for HugeBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            HugeBytes::Heap(v) => v,
            HugeBytes::Mapped { map, len } => &map[..*len],
        }
    }
}

impl DerefMut for HugeBytes {
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            HugeBytes::Heap(v) => v,
            HugeBytes::Mapped { map, len } => &mut map[..*len],
        }
    }
}

impl Clone for HugeBytes {
    fn clone(&self) -> HugeBytes {
        match self {
            HugeBytes::Heap(v) => HugeBytes::Heap(v.clone()),
            HugeBytes::Mapped { .. } => HugeBytes::from_vec(self.to_vec()),
        }
    }
}

impl std::fmt::Debug for HugeBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HugeBytes")
            .field("len", &self.len())
            .field("mapped", &self.is_mapped())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_buffers_stay_on_the_heap_and_large_ones_keep_their_bytes() {
        let small = HugeBytes::from_vec(vec![7; 100]);
        assert!(!small.is_mapped());
        assert_eq!(&*small, &[7; 100][..]);
        let v: Vec<u8> = (0..HUGE_MIN + 12_345).map(|i| (i % 251) as u8).collect();
        let mut big = HugeBytes::from_vec(v.clone());
        assert_eq!(big.len(), v.len());
        assert_eq!(&*big, &v[..]);
        big[HUGE_MIN] ^= 0xff;
        assert_eq!(big[HUGE_MIN], v[HUGE_MIN] ^ 0xff);
        let z = HugeBytes::zeroed(3 * HUGE_MIN + 1);
        assert_eq!(z.len(), 3 * HUGE_MIN + 1);
        assert!(z.iter().all(|&b| b == 0));
        if cfg!(target_os = "linux") {
            assert!(big.is_mapped() && z.is_mapped());
        }
    }
}
