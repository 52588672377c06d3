//! Placing keys in a cuckoo hash table (RocksDB's
//! `CuckooTableBuilder::MakeHashTable` and `MakeSpaceForKey`), step for
//! step so that the same keys give the same table as RocksDB's builder:
//! each key takes the first empty bucket of its hash functions' cuckoo
//! blocks; when all are full, a breadth-first search (at most
//! `max_search_depth` deep) finds a chain of keys to move towards an empty
//! bucket; when none exists, one more hash function is added (up to
//! `max_num_hash_func`).
//!
//! RocksDB quirks kept on purpose (they decide the layout): the search
//! starts from the first `num_hash_func` candidate buckets tried (not one
//! per function when blocks are larger than one bucket), and buckets seen
//! in a search are marked with the search's number.

use std::cmp::Ordering;

use super::hash::CuckooHasher;

/// A bucket no key occupies (RocksDB's `kMaxVectorIdx`).
pub const EMPTY: u32 = i32::MAX as u32;

/// One bucket while the table is built.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    /// Index of the key it holds, or `EMPTY`.
    key: u32,
    /// Number of the last displacement search that visited it.
    search_id: u32,
}

/// A hash table of keys.
#[derive(Debug)]
pub struct HashLayout {
    /// For each of the `table_size + block_size - 1` buckets, the index of
    /// its key or [`EMPTY`].
    pub buckets: Vec<u32>,
    /// Hash functions used (2 or more).
    pub num_hash_func: u32,
}

/// Parameters of [`make_hash_table`].
#[derive(Clone, Copy, Debug)]
pub struct LayoutParams {
    pub hasher: CuckooHasher,
    pub cuckoo_block_size: u32,
    pub max_search_depth: u32,
    pub max_num_hash_func: u32,
}

/// Places the keys `user_key(0..n)` in a table. `Err` names why no table
/// could be built (a key repeated, too many collisions). REQUIRES:
/// `n < EMPTY - 1`, `params.hasher.table_size > 0`, block size >= 1.
pub fn make_hash_table<'a>(
    n: u32,
    user_key: impl Fn(u32) -> &'a [u8],
    eq: impl Fn(&[u8], &[u8]) -> Ordering,
    params: LayoutParams,
) -> Result<HashLayout, String> {
    debug_assert!(n < EMPTY - 1);
    debug_assert!(params.cuckoo_block_size >= 1 && params.hasher.table_size > 0);
    let block = u64::from(params.cuckoo_block_size);
    let len = params
        .hasher
        .table_size
        .checked_add(block - 1)
        .and_then(|l| usize::try_from(l).ok())
        .ok_or_else(|| "hash table too large".to_string())?;
    let mut buckets = vec![
        Bucket {
            key: EMPTY,
            search_id: 0,
        };
        len
    ];
    let mut b = Builder {
        buckets: &mut buckets,
        num_hash_func: 2,
        params,
        user_key: &user_key,
    };
    let mut search_id = 0u32;
    for idx in 0..n {
        let key = user_key(idx);
        let mut found = None;
        let mut tried: Vec<u64> = Vec::new();
        'funcs: for hash_cnt in 0..b.num_hash_func {
            let start = params.hasher.hash(key, hash_cnt);
            for bucket in start..start + block {
                let other = b.buckets[bucket as usize].key;
                if other == EMPTY {
                    found = Some(bucket);
                    break 'funcs;
                }
                if eq(key, user_key(other)) == Ordering::Equal {
                    return Err("the same key is inserted again".into());
                }
                tried.push(bucket);
            }
        }
        while found.is_none() {
            search_id += 1;
            if let Some(at) = b.make_space_for_key(&tried, search_id) {
                found = Some(at);
                break;
            }
            if b.num_hash_func >= params.max_num_hash_func {
                return Err(format!(
                    "too many collisions: no room for a key with {} hash functions and \
                     max_search_depth {}",
                    b.num_hash_func, params.max_search_depth
                ));
            }
            // Earlier hashes stay valid: only a function is added.
            let start = params.hasher.hash(key, b.num_hash_func);
            b.num_hash_func += 1;
            for bucket in start..start + block {
                if b.buckets[bucket as usize].key == EMPTY {
                    found = Some(bucket);
                    break;
                }
                tried.push(bucket);
            }
        }
        // Empty, or freed by moving its key down a displacement path.
        if let Some(at) = found {
            b.buckets[at as usize].key = idx;
        }
    }
    let num_hash_func = b.num_hash_func;
    Ok(HashLayout {
        buckets: buckets.into_iter().map(|b| b.key).collect(),
        num_hash_func,
    })
}

struct Builder<'b, F> {
    buckets: &'b mut [Bucket],
    num_hash_func: u32,
    params: LayoutParams,
    user_key: &'b F,
}

/// A node of the breadth-first search tree.
#[derive(Clone, Copy)]
struct Node {
    bucket: u64,
    depth: u32,
    parent: usize,
}

impl<'a, F: Fn(u32) -> &'a [u8]> Builder<'_, F> {
    /// RocksDB's `MakeSpaceForKey`: searches from the first
    /// `num_hash_func` buckets of `tried` for a path to an empty bucket,
    /// moves the keys along it, and returns the freed first-level bucket.
    fn make_space_for_key(&mut self, tried: &[u64], search_id: u32) -> Option<u64> {
        let block = u64::from(self.params.cuckoo_block_size);
        let mut tree: Vec<Node> = Vec::new();
        for &bucket in tried.iter().take(self.num_hash_func as usize) {
            self.buckets[bucket as usize].search_id = search_id;
            tree.push(Node {
                bucket,
                depth: 0,
                parent: 0,
            });
        }
        let first_level = tree.len();
        let mut null_found = false;
        let mut pos = 0;
        while !null_found && pos < tree.len() {
            let node = tree[pos];
            if node.depth >= self.params.max_search_depth {
                break;
            }
            let held = self.buckets[node.bucket as usize].key;
            debug_assert_ne!(held, EMPTY, "only the last node of a search is empty");
            let key = (self.user_key)(held);
            for hash_cnt in 0..self.num_hash_func {
                if null_found {
                    break;
                }
                let start = self.params.hasher.hash(key, hash_cnt);
                for child in start..start + block {
                    let c = &mut self.buckets[child as usize];
                    if c.search_id == search_id {
                        continue;
                    }
                    c.search_id = search_id;
                    tree.push(Node {
                        bucket: child,
                        depth: node.depth + 1,
                        parent: pos,
                    });
                    if c.key == EMPTY {
                        null_found = true;
                        break;
                    }
                }
            }
            pos += 1;
        }
        if !null_found {
            return None;
        }
        // Move each key on the path one step down, from the empty end.
        let mut at = tree.len() - 1;
        while at >= first_level.min(self.num_hash_func as usize) {
            let node = tree[at];
            let from = tree[node.parent].bucket as usize;
            self.buckets[node.bucket as usize].key = self.buckets[from].key;
            at = node.parent;
        }
        Some(tree[at].bucket)
    }
}
