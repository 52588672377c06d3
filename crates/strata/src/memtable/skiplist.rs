//! An insert-only concurrent skiplist whose nodes and keys live in an
//! [`Arena`] (LevelDB's `db/skiplist.h`, with RocksDB `InlineSkipList`'s
//! inline keys and CAS-based concurrent insert).
//!
//! Owns: the node layout and the list's links. A node is one arena
//! allocation: an 8-byte header (`key_len << 8 | height`; 16 bytes under
//! loom, which adds a tracking cell, see `sync::Published`), then `height`
//! next pointers (`AtomicPtr`), then the key bytes. Keys are opaque
//! byte strings ordered by the [`KeyComparator`] given at construction.
//!
//! Thread-safety: `SkipList` is `Send + Sync`. Readers take no lock: they
//! follow next pointers with acquire loads. Inserts may run concurrently with
//! each other and with readers: a node is fully written (key, height, its own
//! next pointers) before a release compare-and-swap links it at level 0, then
//! at each higher level, bottom up; a failed CAS recomputes that level's
//! neighbours and retries. Nothing is ever unlinked, so a node reached once
//! stays valid (the arena keeps it) for the lifetime of the list.
//!
//! Invariants:
//! - at every level, the linked nodes are in strictly increasing key order;
//! - a node linked at level `l > 0` is linked at every level below `l`;
//! - no two nodes have equal keys (an insert of an existing key is refused);
//! - `1 <= height <= MAX_HEIGHT`; the head node has `MAX_HEIGHT` levels and
//!   no key; `max_height` is at least the height of every linked node.

use std::cell::Cell;
use std::cmp::Ordering as CmpOrdering;
use std::mem::size_of;
use std::ops::Deref;
use std::ptr::{self, NonNull};
use std::sync::Arc;

use super::arena::Arena;
use super::sync::{AtomicPtr, AtomicUsize, Mutex, Ordering, Published};

/// Maximum number of levels of a node.
pub const MAX_HEIGHT: usize = 12;
/// Most keys [`SkipList::insert_many_with`] takes at once.
pub const BATCH: usize = 8;
/// One node in `BRANCHING` at level `l` also appears at level `l + 1`.
const BRANCHING: u32 = 4;

/// Orders the keys of a [`SkipList`]. Must be a total order, deterministic
/// and thread-safe.
pub trait KeyComparator: Send + Sync {
    fn compare(&self, a: &[u8], b: &[u8]) -> CmpOrdering;
}

impl<F> KeyComparator for F
where
    F: Fn(&[u8], &[u8]) -> CmpOrdering + Send + Sync,
{
    #[inline]
    fn compare(&self, a: &[u8], b: &[u8]) -> CmpOrdering {
        self(a, b)
    }
}

/// A node's fixed header, `(key_len << 8) | height`; the tower and the key
/// follow it in the same arena allocation. Only ever accessed through raw
/// pointers that carry the provenance of the whole allocation.
#[repr(C)]
struct Node {
    meta: u64,
    /// Covers `meta` and the key bytes: written once before the node is
    /// published, read only after. Zero-sized except under loom, where it
    /// lets loom check that every read happens-after the write.
    contents: Published,
}

impl Node {
    #[inline]
    fn new(height: usize, key_len: usize) -> Node {
        debug_assert!((1..=MAX_HEIGHT).contains(&height));
        Node {
            meta: ((key_len as u64) << 8) | height as u64,
            contents: Published::new(),
        }
    }

    #[inline]
    fn height(&self) -> usize {
        (self.meta & 0xff) as usize
    }

    #[inline]
    fn key_len(&self) -> usize {
        (self.meta >> 8) as usize
    }
}

/// Longest key a node can hold (56-bit length).
pub const MAX_KEY_LEN: usize = (1 << 56) - 1;

const NODE_HEADER: usize = size_of::<Node>();
const LINK: usize = size_of::<AtomicPtr<Node>>();
const _: () = assert!(NODE_HEADER % super::arena::ALIGN == 0);
// Normal builds keep the 8-byte header: `Published` is zero-sized there.
#[cfg(not(loom))]
const _: () = assert!(NODE_HEADER == 8);
const _: () = assert!(LINK % super::arena::ALIGN == 0);
const _: () = assert!(std::mem::align_of::<Node>() <= super::arena::ALIGN);
const _: () = assert!(std::mem::align_of::<AtomicPtr<Node>>() <= super::arena::ALIGN);

/// Bytes of a node of `height` levels holding a key of `key_len` bytes.
#[inline]
fn node_size(height: usize, key_len: usize) -> usize {
    NODE_HEADER + height * LINK + key_len
}

/// Link `level` of `node`.
///
/// SAFETY (callers): `node` points to a node of a live list (head included)
/// whose header was initialized, `level < height(node)`, and the returned
/// reference is not used after the list's arena drops.
#[inline]
unsafe fn link<'a>(node: *mut Node, level: usize) -> &'a AtomicPtr<Node> {
    // SAFETY: per the contract the tower slot at `level` is inside the node's
    // allocation, aligned to 8 (header and links are 8-byte multiples, the
    // arena aligns to 8), and initialized (built by `init_tower`, then only
    // written atomically or before publication).
    unsafe {
        &*node
            .cast::<u8>()
            .add(NODE_HEADER + level * LINK)
            .cast::<AtomicPtr<Node>>()
    }
}

/// Constructs the null links of a fresh node's tower (levels
/// `0..height`). The arena's memory is not necessarily zero (a pooled
/// block holds an earlier memtable's bytes), and loom atomics are model
/// objects that must be constructed (see `sync`).
///
/// SAFETY (callers): `node` is a fresh, unpublished allocation of at least
/// `node_size(height, _)` bytes, 8-aligned.
#[inline(always)]
unsafe fn init_tower(node: *mut Node, height: usize) {
    for level in 0..height {
        // SAFETY: per the contract the slot is inside the allocation,
        // aligned, and not yet visible to any other thread.
        unsafe {
            node.cast::<u8>()
                .add(NODE_HEADER + level * LINK)
                .cast::<AtomicPtr<Node>>()
                .write(AtomicPtr::new(ptr::null_mut()));
        }
    }
}

/// The key of `node`.
///
/// SAFETY (callers): `node` is a node of a list, not its head, whose header
/// and key were written before the caller obtained the pointer (it was read
/// from a link with acquire, or the caller wrote it), and the returned slice
/// is not used after that list's arena drops.
#[inline]
unsafe fn key_of<'a>(node: *mut Node) -> &'a [u8] {
    // SAFETY: per the contract the header is initialized and the key bytes
    // `[NODE_HEADER + height * LINK, + key_len)` lie inside the node's
    // allocation, which outlives `'a`; they are only written after
    // publication by `with_key_mut`, whose callers exclude every reader.
    unsafe {
        (*node).contents.read(|| {
            let height = (*node).height();
            let len = (*node).key_len();
            std::slice::from_raw_parts(node.cast::<u8>().add(NODE_HEADER + height * LINK), len)
        })
    }
}

#[cfg(not(loom))]
thread_local! {
    /// Per-thread generator for node heights (xorshift64*), seeded distinctly.
    static HEIGHT_RNG: Cell<u64> = Cell::new(seed());
}

// Under loom every execution of a model must make the same choices, so each
// (loom) thread starts from the same fixed seed; loom tests that care about
// heights pass them explicitly (`insert_with_height`).
#[cfg(loom)]
loom::thread_local! {
    static HEIGHT_RNG: Cell<u64> = Cell::new(0x9E37_79B9_7F4A_7C15);
}

#[cfg(not(loom))]
fn seed() -> u64 {
    // A `static` cannot hold a loom atomic; seeding is not under test.
    use std::sync::atomic::AtomicU64;
    static NEXT: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);
    // splitmix64 of a global counter: distinct, non-zero seeds per thread.
    let mut z = NEXT.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) | 1
}

/// See `util::prefetch`.
#[inline(always)]
fn prefetch(p: *const Node) {
    crate::util::prefetch::prefetch(p);
}

/// Prefetches the first two cache lines of `p` (header, tower and the
/// start of the key, which a comparison reads); null is ignored.
#[inline(always)]
fn prefetch_node(p: *mut Node) {
    if !p.is_null() {
        prefetch(p);
        prefetch(p.cast::<u8>().wrapping_add(64).cast::<Node>());
    }
}

/// Where one search of `insert_many_with` stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Search {
    Running,
    /// Every level's pair is known.
    Found,
    /// An equal key is linked: the node is not inserted.
    Equal,
}

/// A height in `1..=MAX_HEIGHT`, `h` with probability `~(1/4)^(h-1)`.
fn random_height() -> usize {
    HEIGHT_RNG.with(|c| {
        let mut x = c.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        c.set(x);
        let mut r = (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32;
        let mut h = 1;
        while h < MAX_HEIGHT && r % BRANCHING == 0 {
            h += 1;
            r /= BRANCHING;
        }
        h
    })
}

/// Where the last insert went: at each level below `height`, the node
/// before it (`prev`) and the node after it (`next`, null at the end), as
/// RocksDB's `InlineSkipList::Splice`. An insert whose key the level-0
/// pair still brackets reuses it (sequential keys are linked with two
/// comparisons); any other searches from the top (`bracketing_level`).
///
/// Invariants: every `prev[i]` is the head or a node of the list with more
/// than `i` levels and `next[i]` null or such a node; `prev[i + 1]` is not
/// after `prev[i]` and `next[i + 1]` not before `next[i]` (so a pair that
/// brackets a key at level `i` brackets it at every level above). Other
/// inserts may have linked nodes between a pair since (the splice is then
/// not tight there); the CAS that links a node fails in that case and the
/// search resumes from `prev[i]`, which is still before the key.
struct Splice {
    height: usize,
    prev: [*mut Node; MAX_HEIGHT + 1],
    next: [*mut Node; MAX_HEIGHT + 1],
    /// Recent inserts' order: +1 for each that followed the last insert,
    /// -1 for each that searched, kept within `±ORDER_SCORE_MAX`.
    /// Reaching an end tells the arena whether fresh huge pages pay off
    /// (`Arena::set_fresh_huge_pages`: not for sequential inserts).
    order_score: i32,
}

/// See [`Splice::order_score`].
const ORDER_SCORE_MAX: i32 = 16;

impl Splice {
    /// A splice that brackets nothing yet (height 0: the next insert
    /// searches from the top).
    const EMPTY: Splice = Splice {
        height: 0,
        prev: [ptr::null_mut(); MAX_HEIGHT + 1],
        next: [ptr::null_mut(); MAX_HEIGHT + 1],
        order_score: 0,
    };
}

/// An insert-only concurrent skiplist. See the module comment.
pub struct SkipList<C> {
    cmp: C,
    arena: Arc<Arena>,
    head: NonNull<Node>,
    /// Height of the tallest node ever linked (1 when empty).
    max_height: AtomicUsize,
    /// The last insert's splice, used by whichever insert takes the lock
    /// without waiting (a lone writer always does; concurrent inserters
    /// that lose the race search from the top).
    splice: Mutex<Splice>,
}

// SAFETY: the list's nodes live in the arena it holds an `Arc` to; nodes are
// only mutated through atomics (links) or before they are published (key,
// header), so sharing and sending the list between threads is sound when
// the comparator itself is `Send + Sync` (required by `KeyComparator`). The
// splice's raw pointers point to nodes of the same arena and are only used
// under its mutex.
unsafe impl<C: KeyComparator> Send for SkipList<C> {}
// SAFETY: see `Send`.
unsafe impl<C: KeyComparator> Sync for SkipList<C> {}

impl<C> std::fmt::Debug for SkipList<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkipList")
            .field("max_height", &self.max_height.load(Ordering::Relaxed))
            .finish()
    }
}

impl<C: KeyComparator> SkipList<C> {
    /// An empty list whose nodes are allocated from `arena`.
    pub fn new(cmp: C, arena: Arc<Arena>) -> Self {
        let head = arena.allocate(node_size(MAX_HEIGHT, 0)).cast::<Node>();
        // SAFETY: `head` is a fresh, 8-aligned allocation large enough for
        // a header and MAX_HEIGHT links, which `init_tower` makes null.
        unsafe {
            head.as_ptr().write(Node::new(MAX_HEIGHT, 0));
            init_tower(head.as_ptr(), MAX_HEIGHT);
        }
        SkipList {
            cmp,
            arena,
            head,
            max_height: AtomicUsize::new(1),
            splice: Mutex::new(Splice::EMPTY),
        }
    }

    /// The arena the nodes live in.
    pub fn arena(&self) -> &Arc<Arena> {
        &self.arena
    }

    /// Inserts a copy of `key`. Returns false (and inserts nothing) if an
    /// equal key is present. Thread-safe.
    pub fn insert(&self, key: &[u8]) -> bool {
        self.insert_with(key.len(), |buf| buf.copy_from_slice(key))
    }

    /// Allocates a node for a key of `len` bytes, lets `fill` write the key
    /// in place, then links the node. Returns false if an equal key is
    /// already present (the node's memory is then wasted). Thread-safe.
    ///
    /// REQUIRES: `len <= MAX_KEY_LEN` (longer keys are refused).
    pub fn insert_with(&self, len: usize, fill: impl FnOnce(&mut [u8])) -> bool {
        if len > MAX_KEY_LEN {
            debug_assert!(false, "skiplist key of {len} bytes");
            return false;
        }
        self.insert_with_height(random_height(), len, fill)
    }

    /// `insert_with` with a given node height (loom models choose heights
    /// so each execution is deterministic). REQUIRES: `1 <= height <=
    /// MAX_HEIGHT`, `len <= MAX_KEY_LEN`.
    #[inline]
    pub(super) fn insert_with_height(
        &self,
        height: usize,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> bool {
        debug_assert!((1..=MAX_HEIGHT).contains(&height) && len <= MAX_KEY_LEN);
        let node = self.new_node(height, len, fill);
        self.link_node(node, height)
    }

    /// A new node of `height` levels for a key of `len` bytes, written by
    /// `fill`; not yet linked (no other thread can reach it).
    /// REQUIRES: `1 <= height <= MAX_HEIGHT`, `len <= MAX_KEY_LEN`.
    #[inline]
    fn new_node(&self, height: usize, len: usize, fill: impl FnOnce(&mut [u8])) -> *mut Node {
        let node = self.arena.allocate(node_size(height, len)).cast::<Node>();
        let node = node.as_ptr();
        // SAFETY: `node` is a fresh 8-aligned allocation of
        // `node_size(height, len)` bytes that no other thread can see yet, so
        // writing the header and tower and taking a unique slice of the key
        // bytes (which are initialized: the arena's memory always is) is
        // sound.
        unsafe {
            node.write(Node::new(height, len));
            init_tower(node, height);
            (*node).contents.write(|| {
                let key = std::slice::from_raw_parts_mut(
                    node.cast::<u8>().add(NODE_HEADER + height * LINK),
                    len,
                );
                fill(key);
            });
        }
        node
    }

    /// Raises `max_height` to at least `height`; returns the list's height
    /// (at least `height`). Most inserts do not raise it: they skip the
    /// atomic read-modify-write.
    #[inline]
    fn raise_max_height(&self, height: usize) -> usize {
        let current = self.max_height.load(Ordering::Relaxed);
        if height > current {
            self.max_height
                .fetch_max(height, Ordering::Relaxed)
                .max(height)
        } else {
            current
        }
    }

    /// Links a fully written, unpublished node at levels `0..height`.
    fn link_node(&self, node: *mut Node, height: usize) -> bool {
        let max = self.raise_max_height(height);
        // SAFETY: `node` is a node of this list (written above) and alive.
        let key = unsafe { key_of(node) };
        let mut cached = self.splice.try_lock().ok();
        // Only an insert that cannot take the shared splice pays for a
        // fresh one.
        let mut local;
        let sp: &mut Splice = match cached.as_deref_mut() {
            Some(sp) => sp,
            None => {
                local = Splice::EMPTY;
                &mut local
            }
        };
        // The lowest level whose pair brackets `key`; levels below it are
        // searched again, starting from that pair.
        let recompute = match self.bracketing_level(sp, key, max) {
            Some(l) => l,
            None => return false,
        };
        for level in (0..recompute).rev() {
            let (p, n, equal) = self.find_splice_for_level(key, sp.prev[level + 1], level);
            if equal {
                // The levels below are not recomputed: start over next time.
                sp.height = 0;
                return false;
            }
            sp.prev[level] = p;
            sp.next[level] = n;
        }
        if !self.link_at_splice(node, height, key, &mut sp.prev, &mut sp.next) {
            return false;
        }
        // The next insert most likely follows this one: bracket it with
        // the new node at the levels it has.
        for level in 0..height {
            sp.prev[level] = node;
        }
        true
    }

    /// Links `node` (key `key`, `height` levels, fully written and not
    /// yet published) at levels `0..height`, bottom up, starting from the
    /// pairs `prev[l]`/`next[l]` (each `prev[l]` before `key`; a pair that
    /// is no longer tight makes the CAS fail and the level is searched on
    /// from `prev[l]`). Leaves each level's final pair in `prev`/`next`.
    /// False (nothing linked) if an equal key is found.
    fn link_at_splice(
        &self,
        node: *mut Node,
        height: usize,
        key: &[u8],
        prev: &mut [*mut Node; MAX_HEIGHT + 1],
        next: &mut [*mut Node; MAX_HEIGHT + 1],
    ) -> bool {
        for level in 0..height {
            loop {
                // Not yet reachable at `level`, so a relaxed store suffices;
                // the release CAS below publishes it.
                // SAFETY: `node` has `height > level` levels (written in
                // `insert_with`) and lives in our arena.
                unsafe { link(node, level) }.store(next[level], Ordering::Relaxed);
                // SAFETY: `prev[level]` is the head or a node linked at
                // `level`, so it has more than `level` levels.
                if unsafe { link(prev[level], level) }
                    .compare_exchange(next[level], node, Ordering::Release, Ordering::Relaxed)
                    .is_ok()
                {
                    break;
                }
                // Someone linked a node after `prev[level]`: it is still
                // before us, so search on from it.
                let (p, n, equal) = self.find_splice_for_level(key, prev[level], level);
                if equal {
                    // Only possible at level 0: a node is linked at level 0
                    // before any higher level, and ours is not yet there.
                    debug_assert_eq!(level, 0);
                    return false;
                }
                prev[level] = p;
                next[level] = n;
            }
        }
        true
    }

    /// Inserts up to [`BATCH`] keys: key `i` has `lens[i]` bytes, written
    /// in place by `fill(i, buf)`. Returns a bit mask of the keys inserted
    /// (bit `i` clear: an equal key was present). Thread-safe, like
    /// `insert_with`.
    ///
    /// Why: a search from the top is a chain of dependent cache misses
    /// (each node's successor is known only once the node is loaded), and
    /// it is most of an insert's time in a large memtable. Here the keys'
    /// searches advance in turns, one step each, every step prefetching the
    /// node its search compares next: while one search waits for memory
    /// the others proceed (group prefetching), so a batch's misses overlap
    /// instead of adding up. Each node is then linked from the neighbours
    /// found, as a single insert links from its splice (a pair made stale
    /// by an earlier key of the batch or by another thread fails its CAS
    /// and the level is searched on from its `prev`, which stays before
    /// the key). Keys that follow the previous insert (sequential loads)
    /// keep the one-at-a-time path, which links them from the cached
    /// splice without a search.
    ///
    /// REQUIRES: `lens.len() <= BATCH`, every `lens[i] <= MAX_KEY_LEN`.
    pub fn insert_many_with(&self, lens: &[usize], mut fill: impl FnMut(usize, &mut [u8])) -> u32 {
        let count = lens.len();
        debug_assert!(count <= BATCH);
        if count > BATCH || lens.iter().any(|&l| l > MAX_KEY_LEN) {
            debug_assert!(false, "skiplist batch of {count} keys or an oversized key");
            return 0;
        }
        let mut nodes = [ptr::null_mut::<Node>(); BATCH];
        let mut heights = [0usize; BATCH];
        for (i, &len) in lens.iter().enumerate() {
            let height = random_height();
            let node = self.new_node(height, len, |key| fill(i, key));
            nodes[i] = node;
            heights[i] = height;
        }
        let max = self.raise_max_height(heights[..count].iter().copied().max().unwrap_or(1));
        // SAFETY (every `key_of` of `nodes` below): nodes written above,
        // alive with the arena.
        let follows_last_insert = count > 0
            && self.splice.try_lock().is_ok_and(|mut sp| {
                let follows =
                    self.bracketing_level(&mut sp, unsafe { key_of(nodes[0]) }, max) == Some(0);
                if !follows {
                    // `bracketing_level` left the pairs below `max` to be
                    // searched; this batch does not: search from the top
                    // next time.
                    sp.height = 0;
                }
                follows
            });
        let mut inserted = 0u32;
        if count < 2 || follows_last_insert {
            for i in 0..count {
                if self.link_node(nodes[i], heights[i]) {
                    inserted |= 1 << i;
                }
            }
            return inserted;
        }
        // The interleaved searches: search `i` stands at `x[i]` on level
        // `level[i]`, about to compare `n[i]` (its successor there, being
        // prefetched). Its pairs go to `prev[i]`/`next[i]`.
        let mut prev = [[ptr::null_mut::<Node>(); MAX_HEIGHT + 1]; BATCH];
        let mut next = [[ptr::null_mut::<Node>(); MAX_HEIGHT + 1]; BATCH];
        let mut x = [self.head.as_ptr(); BATCH];
        let mut level = [max - 1; BATCH];
        let mut n = [ptr::null_mut::<Node>(); BATCH];
        let mut state = [Search::Running; BATCH];
        for i in 0..count {
            n[i] = self.next(x[i], max - 1);
            prefetch_node(n[i]);
        }
        let mut running = count;
        while running > 0 {
            for i in 0..count {
                if state[i] != Search::Running {
                    continue;
                }
                let succ = n[i];
                let ord = if succ.is_null() {
                    CmpOrdering::Greater
                } else {
                    // SAFETY: a non-null link target is a published node.
                    self.cmp
                        .compare(unsafe { key_of(succ) }, unsafe { key_of(nodes[i]) })
                };
                let l = level[i];
                if ord == CmpOrdering::Less {
                    x[i] = succ;
                    n[i] = self.next(succ, l);
                    prefetch_node(n[i]);
                    continue;
                }
                prev[i][l] = x[i];
                next[i][l] = succ;
                if ord == CmpOrdering::Equal {
                    state[i] = Search::Equal;
                    running -= 1;
                } else if l == 0 {
                    state[i] = Search::Found;
                    running -= 1;
                } else {
                    level[i] = l - 1;
                    n[i] = self.next(x[i], l - 1);
                    prefetch_node(n[i]);
                }
            }
        }
        for i in 0..count {
            // Every level below `max >= heights[i]` has its pair.
            if state[i] == Search::Found
                && self.link_at_splice(
                    nodes[i],
                    heights[i],
                    unsafe { key_of(nodes[i]) },
                    &mut prev[i],
                    &mut next[i],
                )
            {
                inserted |= 1 << i;
            }
        }
        // Leave the shared splice at the batch's last inserted key, as a
        // single insert does, so that a next batch continuing a run of
        // ascending keys takes the cached path. Its pairs satisfy the
        // splice invariants as a single insert's do: found top down, moved
        // only forward by the link, the node's own levels pointing at it.
        if let Some(last) = (0..count).rev().find(|&i| inserted & (1 << i) != 0)
            && let Ok(mut sp) = self.splice.try_lock()
        {
            sp.prev = prev[last];
            sp.next = next[last];
            sp.height = max;
            for level in 0..heights[last] {
                sp.prev[level] = nodes[last];
            }
        }
        inserted
    }

    /// The lowest level from which `sp` needs no new search for `key`:
    /// 0 when the level-0 pair still brackets `key` tightly (the key
    /// follows the last insert: sequential keys), else `max`, with the
    /// head/end pair that brackets every key set above the tallest level
    /// (a search from the top). `None` if `key` is already linked.
    ///
    /// Unlike RocksDB, which tries every level of the splice, only level 0
    /// is tried: for random keys the extra comparisons with old splice
    /// nodes cost more than the search they save.
    fn bracketing_level(&self, sp: &mut Splice, key: &[u8], max: usize) -> Option<usize> {
        if sp.height >= max {
            let (p, n) = (sp.prev[0], sp.next[0]);
            debug_assert!(!p.is_null());
            let after_prev = p == self.head.as_ptr()
                // SAFETY: a non-head `prev` is a linked node (splice
                // invariant; `height >= max` means every level is set).
                || self.cmp.compare(unsafe { key_of(p) }, key) == CmpOrdering::Less;
            if after_prev && self.next(p, 0) == n {
                let order = if n.is_null() {
                    CmpOrdering::Less
                } else {
                    // SAFETY: a non-null `next` is a linked node.
                    self.cmp.compare(key, unsafe { key_of(n) })
                };
                match order {
                    CmpOrdering::Less => {
                        self.note_order(sp, true);
                        return Some(0);
                    }
                    CmpOrdering::Equal => return None,
                    CmpOrdering::Greater => {}
                }
            }
        }
        self.note_order(sp, false);
        sp.height = max;
        // Above the tallest level the head/end pair brackets every key.
        sp.prev[max] = self.head.as_ptr();
        sp.next[max] = ptr::null_mut();
        Some(max)
    }

    /// Counts an insert that followed the last one (`sequential`) or
    /// searched, and tells the arena when the recent inserts turn out all
    /// sequential (no fresh huge pages) or all searched (fresh huge pages
    /// again). A local splice (an insert that lost the shared one) never
    /// reaches either end.
    fn note_order(&self, sp: &mut Splice, sequential: bool) {
        let score = if sequential {
            (sp.order_score + 1).min(ORDER_SCORE_MAX)
        } else {
            (sp.order_score - 1).max(-ORDER_SCORE_MAX)
        };
        if score != sp.order_score {
            sp.order_score = score;
            if score.abs() == ORDER_SCORE_MAX {
                self.arena.set_fresh_huge_pages(!sequential);
            }
        }
    }

    /// Starting at `before` (whose key is < `key`, or the head), walks
    /// `level` to the last node < `key`. Returns it, its successor (null at
    /// the end), and whether the successor's key equals `key`.
    fn find_splice_for_level(
        &self,
        key: &[u8],
        before: *mut Node,
        level: usize,
    ) -> (*mut Node, *mut Node, bool) {
        let mut x = before;
        if level > 0 {
            prefetch(self.next(x, level - 1));
        }
        loop {
            let n = self.next(x, level);
            if n.is_null() {
                return (x, n, false);
            }
            // Start loading `n`'s successor while `n`'s key is compared
            // (as RocksDB's FindSpliceForLevel): the walk is bound by
            // memory latency, and this overlaps two misses. If `n` turns
            // out to be the last node before `key`, the search goes on one
            // level down from it: start loading that successor too.
            prefetch(self.next(n, level));
            if level > 0 {
                prefetch(self.next(n, level - 1));
            }
            // SAFETY: `n` was read from a link, so it is a published node.
            match self.cmp.compare(unsafe { key_of(n) }, key) {
                CmpOrdering::Less => x = n,
                CmpOrdering::Equal => return (x, n, true),
                CmpOrdering::Greater => return (x, n, false),
            }
        }
    }

    /// The successor of `x` at `level`. REQUIRES: `x` is the head or a
    /// published node with more than `level` levels.
    #[inline]
    fn next(&self, x: *mut Node, level: usize) -> *mut Node {
        debug_assert!(level < MAX_HEIGHT);
        // SAFETY: per the REQUIRES, `x` is a live node of this list with a
        // link at `level`; the acquire load pairs with the release CAS that
        // published the successor, so its contents are visible.
        unsafe { link(x, level).load(Ordering::Acquire) }
    }

    /// Lets `f` rewrite in place the key of the first node with key >=
    /// `key`; `None` if there is none. The node stays where it is: `f`
    /// must not change how the key orders.
    ///
    /// # Safety
    /// While this runs, no other thread reads or writes that node's key
    /// (holds or forms a slice of it): the caller excludes every reader of
    /// the list's keys and every other writer, e.g. with a lock they all
    /// take.
    pub unsafe fn with_key_mut<R>(&self, key: &[u8], f: impl FnOnce(&mut [u8]) -> R) -> Option<R> {
        let n = self.find_greater_or_equal(key);
        if n.is_null() {
            return None;
        }
        // SAFETY: `n` is a published node (not the head); its key bytes
        // lie inside its arena allocation, reached through the pointer
        // the arena handed out (write provenance), and per the contract
        // nobody else touches them while `f` runs.
        Some(unsafe {
            (*n).contents.write(|| {
                let height = (*n).height();
                let len = (*n).key_len();
                f(std::slice::from_raw_parts_mut(
                    n.cast::<u8>().add(NODE_HEADER + height * LINK),
                    len,
                ))
            })
        })
    }

    /// First node with key >= `key`, or null.
    fn find_greater_or_equal(&self, key: &[u8]) -> *mut Node {
        let mut x = self.head.as_ptr();
        let mut level = self.max_height.load(Ordering::Relaxed) - 1;
        loop {
            let n = self.next(x, level);
            if !n.is_null() {
                // As in `find_splice_for_level`: `n`'s successors at this
                // level and the next one down start loading.
                prefetch(self.next(n, level));
                if level > 0 {
                    prefetch(self.next(n, level - 1));
                }
            }
            // SAFETY: a non-null link target is a published node.
            let ord = (!n.is_null()).then(|| self.cmp.compare(unsafe { key_of(n) }, key));
            match ord {
                Some(CmpOrdering::Less) => x = n,
                Some(CmpOrdering::Equal) => return n,
                _ if level == 0 => return n,
                _ => level -= 1,
            }
        }
    }

    /// Last node with key < `key` (`or_equal`: <= `key`), or the head.
    fn find_less_than(&self, key: &[u8], or_equal: bool) -> *mut Node {
        let mut x = self.head.as_ptr();
        let mut level = self.max_height.load(Ordering::Relaxed) - 1;
        loop {
            let n = self.next(x, level);
            let advance = !n.is_null() && {
                // SAFETY: a non-null link target is a published node.
                let ord = self.cmp.compare(unsafe { key_of(n) }, key);
                ord == CmpOrdering::Less || (or_equal && ord == CmpOrdering::Equal)
            };
            if advance {
                x = n;
            } else if level == 0 {
                return x;
            } else {
                level -= 1;
            }
        }
    }

    /// Last node of the list, or the head if it is empty.
    fn find_last(&self) -> *mut Node {
        let mut x = self.head.as_ptr();
        let mut level = self.max_height.load(Ordering::Relaxed) - 1;
        loop {
            let n = self.next(x, level);
            if !n.is_null() {
                x = n;
            } else if level == 0 {
                return x;
            } else {
                level -= 1;
            }
        }
    }

    /// Whether a key equal to `key` is in the list.
    pub fn contains(&self, key: &[u8]) -> bool {
        let n = self.find_greater_or_equal(key);
        // SAFETY: a non-null result is a published node.
        !n.is_null() && self.cmp.compare(unsafe { key_of(n) }, key) == CmpOrdering::Equal
    }

    /// A cursor borrowing the list.
    pub fn iter(&self) -> Iter<&Self> {
        Iter::new(self)
    }
}

/// A cursor over a [`SkipList`], generic over how it holds the list
/// (`&SkipList` or `Arc<SkipList>`), so a cursor can own its list. Sees
/// every node linked before each step; concurrent inserts may or may not be
/// seen, but the keys it yields are always in order.
pub struct Iter<L> {
    list: L,
    /// Current node; null when not valid. Never the head.
    node: *mut Node,
}

// SAFETY: `node` points into the arena kept alive by `list`; it is only read
// (key bytes never change after publication; links are atomics), so the
// cursor may move between threads whenever its holder `L` can.
unsafe impl<L: Send> Send for Iter<L> {}
// SAFETY: `&Iter` only allows reads of immutable key bytes; see `Send`.
unsafe impl<L: Sync> Sync for Iter<L> {}

impl<L> std::fmt::Debug for Iter<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("skiplist::Iter")
            .field("valid", &!self.node.is_null())
            .finish()
    }
}

impl<C: KeyComparator, L: Deref<Target = SkipList<C>>> Iter<L> {
    /// A cursor over `list`, initially not valid.
    pub fn new(list: L) -> Self {
        Iter {
            list,
            node: ptr::null_mut(),
        }
    }

    /// Maps the head to null (not valid).
    fn set(&mut self, n: *mut Node) {
        self.node = if n == self.list.head.as_ptr() {
            ptr::null_mut()
        } else {
            n
        };
    }

    pub fn valid(&self) -> bool {
        !self.node.is_null()
    }

    /// The current key. REQUIRES: `valid()`; returns an empty slice if not.
    pub fn key(&self) -> &[u8] {
        if self.node.is_null() {
            debug_assert!(false, "key() on an invalid skiplist cursor");
            return &[];
        }
        // SAFETY: a valid cursor's node is a published, non-head node of
        // `self.list`, which keeps the arena alive while `self` is borrowed.
        unsafe { key_of(self.node) }
    }

    /// Advances to the next key. REQUIRES: `valid()`.
    pub fn next(&mut self) {
        debug_assert!(self.valid());
        if self.valid() {
            self.node = self.list.next(self.node, 0);
        }
    }

    /// Moves to the previous key (a search from the head for the last node
    /// before the current one). REQUIRES: `valid()`.
    pub fn prev(&mut self) {
        debug_assert!(self.valid());
        if self.valid() {
            let n = self.list.find_less_than(self.key(), false);
            self.set(n);
        }
    }

    /// Positions at the first key >= `target`.
    pub fn seek(&mut self, target: &[u8]) {
        self.node = self.list.find_greater_or_equal(target);
    }

    /// Positions at the last key <= `target`.
    pub fn seek_for_prev(&mut self, target: &[u8]) {
        let n = self.list.find_less_than(target, true);
        self.set(n);
    }

    pub fn seek_to_first(&mut self) {
        self.node = self.list.next(self.list.head.as_ptr(), 0);
    }

    pub fn seek_to_last(&mut self) {
        let n = self.list.find_last();
        self.set(n);
    }
}

// Plain-thread tests; loom builds run only `loom_tests`.
#[cfg(all(test, not(loom)))]
#[path = "skiplist_tests.rs"]
mod tests;
