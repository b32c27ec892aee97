//! Newcomers with the policy's own α: one FIFO per message length and a tournament over the fronts.

use super::Key;
use crate::ring::Ring;

/// Classes a lane keeps apart (message lengths seen first get one; later lengths use `Rest`).
pub(super) const MAX_CLASSES: usize = 8;
/// Longest message length that can have a class.
pub(super) const MAX_CLASS_LEN: u32 = 1 << 12;

/// Newcomers with the policy's own α, one FIFO per message length.
///
/// With a fixed α a newcomer's priority is `clock + α·l`, and the clock never goes back, so the
/// messages of one length enter in priority order and leave in arrival order: each length is a
/// FIFO, pushing is O(1), and the next message is the best of at most [`MAX_CLASSES`] fronts. (§9
/// of the report makes the same observation: among messages of one length alpha scheduling is
/// FIFO.) A head that is preempted has a smaller priority than its length implies and goes to the
/// stack of preempted heads instead.
///
/// Only the fronts' priorities are compared, not their arrival order: for α > 0 two fronts of
/// different lengths with equal priorities `c₁ + α·l₁ = c₂ + α·l₂` have `c₁ > c₂` when `l₁ < l₂`,
/// so the longer one entered at an earlier clock and is the older. Keeping the classes sorted by
/// length, longest first, and taking the first strict minimum therefore breaks ties by arrival
/// exactly. (With SF every class front's priority is its length, so there are no ties; α = 0 has
/// no classes: every newcomer is then behind all others anyway.)
#[derive(Clone, Debug)]
pub(super) struct Classes {
    /// Message length → class index + 1 (0: no class yet).
    pub(super) of_len: Vec<u8>,
    /// Length of each class, longest first.
    pub(super) lens: Vec<u32>,
    /// One FIFO per class (unused ones empty); indices are taken modulo [`MAX_CLASSES`], which
    /// lets the compiler drop the bounds checks.
    pub(super) queues: [Ring<Key>; MAX_CLASSES],
    /// Priority of each class's front; `i64::MAX` when empty (also for unused classes). Real
    /// priorities stay far below it: the clock is renormalised and α·l ≤ 2⁴⁶·2¹².
    pub(super) keys: [i64; MAX_CLASSES],
    pub(super) len: usize,
}

impl Classes {
    pub(super) fn new() -> Self {
        Classes {
            of_len: Vec::new(),
            lens: Vec::new(),
            queues: std::array::from_fn(|_| Ring::default()),
            keys: [i64::MAX; MAX_CLASSES],
            len: 0,
        }
    }

    /// The class of messages of `packets` packets, created on first sight while there is room.
    #[inline(always)]
    pub(super) fn class_of(&mut self, packets: u32) -> Option<usize> {
        match self.of_len.get(packets as usize) {
            Some(&c) if c > 0 => Some(usize::from(c - 1)),
            _ => self.new_class(packets),
        }
    }

    /// Adds a class in its place in the length order (rare: at most [`MAX_CLASSES`] times).
    #[cold]
    fn new_class(&mut self, packets: u32) -> Option<usize> {
        if packets > MAX_CLASS_LEN || self.lens.len() == MAX_CLASSES {
            return None;
        }
        if self.of_len.len() <= packets as usize {
            self.of_len.resize(packets as usize + 1, 0);
        }
        let at = self.lens.partition_point(|&l| l > packets);
        self.lens.insert(at, packets);
        // The last slot is unused and empty: rotating it to `at` opens the new class there.
        self.queues[at..].rotate_right(1);
        self.keys.copy_within(at..MAX_CLASSES - 1, at + 1);
        self.keys[at] = i64::MAX;
        for (c, &l) in self.lens.iter().enumerate() {
            self.of_len[l as usize] = c as u8 + 1;
        }
        Some(at)
    }

    /// Appends `k` to class `c`.
    #[inline(always)]
    pub(super) fn push(&mut self, c: usize, k: Key) {
        // Priorities grow within a class, so the front changes only when the class was empty;
        // whether it was is unpredictable, so the cached front is selected, not branched on.
        let c = c % MAX_CLASSES;
        let q = &mut self.queues[c];
        self.keys[c] = std::hint::select_unpredictable(q.is_empty(), k.key, self.keys[c]);
        q.push_back(k);
        self.len += 1;
    }

    /// The class with the best front (meaningful when any class holds a message).
    #[inline(always)]
    pub(super) fn best(&self) -> usize {
        tournament(&self.keys)
    }

    /// The front of class `c` (which is not empty).
    #[inline(always)]
    pub(super) fn front(&self, c: usize) -> &Key {
        self.queues[c % MAX_CLASSES].front().expect("the best class is not empty")
    }

    /// Takes the front of class `c` (which is not empty).
    #[inline(always)]
    pub(super) fn pop(&mut self, c: usize) -> Key {
        let c = c % MAX_CLASSES;
        let q = &mut self.queues[c];
        let k = q.pop_front().expect("the best class is not empty");
        // Whether the class is now empty is unpredictable: select, don't branch.
        self.keys[c] = std::hint::select_unpredictable(q.is_empty(), i64::MAX, q.front_or_stale().key);
        self.len -= 1;
        k
    }

    pub(super) fn shift(&mut self, shift: i64) {
        for (c, q) in self.queues.iter_mut().enumerate() {
            q.for_each_mut(|k| k.key -= shift);
            self.keys[c] = q.front().map_or(i64::MAX, |k| k.key);
        }
    }
}

/// The index of the lowest of eight priorities: a fixed three-level tournament (unused slots hold
/// `i64::MAX`), no loop and no branch, every step a conditional move (which class is best is
/// unpredictable). The right side wins only when strictly lower, so ties go to the lower index,
/// the longer class.
#[inline(always)]
pub(super) fn tournament(k: &[i64; MAX_CLASSES]) -> usize {
    #[inline(always)]
    fn min(a: (usize, i64), b: (usize, i64)) -> (usize, i64) {
        let right = b.1 < a.1;
        (std::hint::select_unpredictable(right, b.0, a.0), std::hint::select_unpredictable(right, b.1, a.1))
    }
    let ab = min(min((0, k[0]), (1, k[1])), min((2, k[2]), (3, k[3])));
    let cd = min(min((4, k[4]), (5, k[5])), min((6, k[6]), (7, k[7])));
    min(ab, cd).0
}
