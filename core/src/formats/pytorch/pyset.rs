//! CPython's `set` of small non-negative integers, for the iteration order torch 2.14's
//! `_add_unshard_reshard` gets from one.
//!
//! Torch 2.14 keeps the unsharded stages in a Python `set` and reshards them in its iteration
//! order, which is the order of the hash table's slots: for integers below the table size that
//! is ascending, and otherwise depends on the history of additions and removals. This is that
//! table as CPython 3.11 keeps it (the Python torch 2.14 runs on): 8 slots to start with,
//! an integer's hash is itself, probing looks at the slot `hash & mask` and the 9 after it
//! when they fit in the table, then jumps with `i = 5i + 1 + perturb`, `perturb >>= 5`; a
//! removed key leaves a dummy, which an addition reuses (the last dummy on its probe path); a
//! table more than 60 % filled (dummies counted) is rebuilt at the smallest power of two above
//! 4 × the keys it holds. It was checked against CPython 3.11.7's own sets over random sequences
//! of additions and removals, and is checked here through torch 2.14's lowerings (the
//! `tests/fixtures/pytorch-lowering/` goldens with 16 stages).

/// One slot of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Unused,
    Dummy,
    Key(u32),
}

/// The table. Keys are stage indices.
#[derive(Clone, Debug)]
pub(super) struct PySet {
    table: Vec<Slot>,
    fill: usize,
    used: usize,
}

impl Default for PySet {
    fn default() -> PySet {
        PySet { table: vec![Slot::Unused; MIN_SIZE], fill: 0, used: 0 }
    }
}

const MIN_SIZE: usize = 8;
const LINEAR_PROBES: usize = 9;
const PERTURB_SHIFT: u32 = 5;

/// The slots a lookup of `hash` visits in a table of `mask + 1` slots, in order (endless: the
/// caller stops at an unused slot, which a table never runs out of).
fn probe(hash: usize, mask: usize) -> impl Iterator<Item = usize> {
    let mut i = hash & mask;
    let mut perturb = hash;
    let mut run = 0..0;
    std::iter::from_fn(move || {
        if let Some(j) = run.next() {
            return Some(j);
        }
        let start = i;
        let probes = if i + LINEAR_PROBES <= mask { LINEAR_PROBES } else { 0 };
        run = start + 1..start + 1 + probes;
        perturb >>= PERTURB_SHIFT;
        i = (i.wrapping_mul(5).wrapping_add(1).wrapping_add(perturb)) & mask;
        Some(start)
    })
}

impl PySet {
    fn mask(&self) -> usize {
        self.table.len() - 1
    }

    /// Whether `key` is in the set.
    pub(super) fn contains(&self, key: u32) -> bool {
        for j in probe(key as usize, self.mask()) {
            match self.table[j] {
                Slot::Unused => return false,
                Slot::Key(k) if k == key => return true,
                _ => {}
            }
        }
        false
    }

    /// `set.add(key)`.
    pub(super) fn add(&mut self, key: u32) {
        let mut free = None;
        for j in probe(key as usize, self.mask()) {
            match self.table[j] {
                Slot::Key(k) if k == key => return,
                Slot::Key(_) => {}
                Slot::Dummy => free = Some(j),
                Slot::Unused => {
                    if let Some(f) = free {
                        self.table[f] = Slot::Key(key);
                        self.used += 1;
                        return;
                    }
                    self.table[j] = Slot::Key(key);
                    self.fill += 1;
                    self.used += 1;
                    if self.fill * 5 >= self.mask() * 3 {
                        self.resize(self.used * 4);
                    }
                    return;
                }
            }
        }
    }

    /// `set.remove(key)` (nothing when absent).
    pub(super) fn remove(&mut self, key: u32) {
        for j in probe(key as usize, self.mask()) {
            match self.table[j] {
                Slot::Unused => return,
                Slot::Key(k) if k == key => {
                    self.table[j] = Slot::Dummy;
                    self.used -= 1;
                    return;
                }
                _ => {}
            }
        }
    }

    /// Rebuilds the table at the smallest power of two above `min_used` slots, without dummies.
    fn resize(&mut self, min_used: usize) {
        let mut size = MIN_SIZE;
        while size <= min_used {
            size <<= 1;
        }
        let old = std::mem::replace(&mut self.table, vec![Slot::Unused; size]);
        self.fill = self.used;
        let mask = size - 1;
        for slot in old {
            if let Slot::Key(k) = slot {
                if let Some(j) = probe(k as usize, mask).find(|&j| self.table[j] == Slot::Unused) {
                    self.table[j] = Slot::Key(k);
                }
            }
        }
    }

    /// The keys in iteration order (`list(s)`).
    pub(super) fn items(&self) -> Vec<u32> {
        self.table.iter().filter_map(|s| if let Slot::Key(k) = s { Some(*k) } else { None }).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(ops: &[(bool, u32)]) -> Vec<u32> {
        let mut s = PySet::default();
        for &(add, k) in ops {
            if add {
                s.add(k);
            } else {
                s.remove(k);
            }
        }
        s.items()
    }

    #[test]
    fn iterates_as_cpython_does() {
        // Each expected list is what CPython 3.11.7 prints for `list(s)`.
        assert_eq!(run(&[(true, 0), (true, 8)]), [0, 8]);
        assert_eq!(run(&[(true, 8), (true, 0)]), [8, 0]);
        assert_eq!(run(&[(true, 0), (true, 8), (false, 0), (true, 16)]), [16, 8]);
        assert_eq!(run(&[(true, 8), (true, 17), (false, 8), (true, 8)]), [8, 17]);
        assert_eq!(run(&[(true, 6), (false, 6), (true, 8), (true, 17), (false, 8), (true, 16)]), [17, 16]);
        assert_eq!(run(&[(true, 6), (true, 8), (true, 17), (false, 8), (true, 16)]), [16, 17, 6]);
        assert_eq!(run(&[(true, 3), (false, 3), (true, 8), (true, 17), (false, 8), (true, 24)]), [24, 17]);
        assert_eq!(run(&[(true, 3), (true, 1), (true, 2)]), [1, 2, 3]);
    }
}
