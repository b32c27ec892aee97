//! [`Ring`]: a growable ring buffer with one extra trick, [`Ring::rotate_front`], which serves the
//! front element and puts it back at the tail in place. Round robin does that once per packet, so
//! it is the hottest operation of the round-robin policies (§4 of the report).
//!
//! Safe code only: the storage is a `Vec<E>` whose length is a power of two, kept full of valid
//! (possibly stale) copies, so no slot is ever uninitialised. Indices run freely and are masked.

/// A FIFO ring of `Copy` elements.
#[derive(Clone, Debug)]
pub(crate) struct Ring<E> {
    buf: Vec<E>,
    /// Index of the front element (unmasked).
    head: usize,
    /// One past the back element (unmasked); `tail - head` is the length.
    tail: usize,
}

impl<E> Default for Ring<E> {
    fn default() -> Self {
        Ring { buf: Vec::new(), head: 0, tail: 0 }
    }
}

impl<E: Copy> Ring<E> {
    #[inline(always)]
    fn mask(&self) -> usize {
        self.buf.len().wrapping_sub(1)
    }

    #[inline(always)]
    pub fn len(&self) -> usize {
        self.tail.wrapping_sub(self.head)
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.head == self.tail
    }

    #[inline(always)]
    pub fn push_back(&mut self, e: E) {
        if self.len() == self.buf.len() {
            self.grow(e);
        }
        let m = self.mask();
        self.buf[self.tail & m] = e;
        self.tail = self.tail.wrapping_add(1);
    }

    #[cold]
    fn grow(&mut self, fill: E) {
        let cap = (self.buf.len() * 2).max(8);
        let mut v = vec![fill; cap];
        let m = self.mask();
        for (k, slot) in v.iter_mut().enumerate().take(self.len()) {
            *slot = self.buf[self.head.wrapping_add(k) & m];
        }
        self.tail = self.len();
        self.head = 0;
        self.buf = v;
    }

    /// Inserts `e` so that `idx` elements stay in front of it (`idx <= len`); O(idx).
    #[inline]
    pub fn insert(&mut self, idx: usize, e: E) {
        debug_assert!(idx <= self.len());
        if self.len() == self.buf.len() {
            self.grow(e);
        }
        let m = self.mask();
        self.head = self.head.wrapping_sub(1);
        for k in 0..idx {
            let (a, b) = (self.head.wrapping_add(k) & m, self.head.wrapping_add(k + 1) & m);
            self.buf[a] = self.buf[b];
        }
        self.buf[self.head.wrapping_add(idx) & m] = e;
    }

    /// Round robin over up to `n` turns: each turn `serve` updates the front element and says
    /// whether it stays (it then moves to the back) or leaves (`gone` is told, with the turn
    /// number). Stops early when the ring empties; returns the number of turns. The indices stay
    /// in registers for the whole run.
    #[inline(always)]
    pub fn rotate_many(&mut self, n: u64, mut serve: impl FnMut(&mut E) -> bool, mut gone: impl FnMut(u64, &E)) -> u64 {
        let buf = &mut self.buf[..];
        if buf.is_empty() {
            return 0;
        }
        // A non-empty power-of-two buffer: `x & m < len`, so the indexing below is unchecked.
        let m = buf.len() - 1;
        let (mut h, mut t) = (self.head, self.tail);
        let mut i = 0;
        while i < n && h != t {
            let mut e = buf[h & m];
            h = h.wrapping_add(1);
            let stays = serve(&mut e);
            // Slot `t` is free: one element just left the front.
            buf[t & m] = e;
            t = t.wrapping_add(usize::from(stays));
            if !stays {
                gone(i, &e);
            }
            i += 1;
        }
        self.head = h;
        self.tail = t;
        i
    }

    #[inline(always)]
    pub fn front(&self) -> Option<&E> {
        if self.is_empty() {
            return None;
        }
        Some(&self.buf[self.head & self.mask()])
    }

    /// The slot at the front: the front element, or a stale copy of an element that left when
    /// the ring is empty (the ring must have held an element once). Lets a caller select on
    /// `is_empty()` instead of branching on it.
    #[inline(always)]
    pub fn front_or_stale(&self) -> &E {
        &self.buf[self.head & self.mask()]
    }

    #[inline(always)]
    pub fn back(&self) -> Option<&E> {
        if self.is_empty() {
            return None;
        }
        Some(&self.buf[self.tail.wrapping_sub(1) & self.mask()])
    }

    #[inline(always)]
    pub fn pop_back(&mut self) -> Option<E> {
        if self.is_empty() {
            return None;
        }
        self.tail = self.tail.wrapping_sub(1);
        Some(self.buf[self.tail & self.mask()])
    }

    /// Applies `f` to every element, front to back.
    pub fn for_each_mut(&mut self, mut f: impl FnMut(&mut E)) {
        let m = self.mask();
        for k in 0..self.len() {
            f(&mut self.buf[self.head.wrapping_add(k) & m]);
        }
    }

    #[inline(always)]
    pub fn front_mut(&mut self) -> Option<&mut E> {
        if self.is_empty() {
            return None;
        }
        let m = self.mask();
        Some(&mut self.buf[self.head & m])
    }

    #[inline(always)]
    pub fn pop_front(&mut self) -> Option<E> {
        if self.is_empty() {
            return None;
        }
        let e = self.buf[self.head & self.mask()];
        self.head = self.head.wrapping_add(1);
        Some(e)
    }

    /// Applies `serve` to the front element; if it returns true the element moves to the back,
    /// otherwise it leaves the ring. Returns the element as served. Branch-free apart from `serve`:
    /// the element is always written to the tail slot (which is the slot it came from when the
    /// ring is full) and the tail advances only when it stays.
    #[inline(always)]
    pub fn rotate_front(&mut self, serve: impl FnOnce(&mut E) -> bool) -> Option<E> {
        if self.is_empty() {
            return None;
        }
        let m = self.mask();
        let mut e = self.buf[self.head & m];
        self.head = self.head.wrapping_add(1);
        let stays = serve(&mut e);
        self.buf[self.tail & m] = e;
        self.tail = self.tail.wrapping_add(usize::from(stays));
        Some(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    #[test]
    fn behaves_like_a_vecdeque() {
        // A deterministic mix of pushes, pops and rotations checked against VecDeque.
        let mut r: Ring<u32> = Ring::default();
        let mut d: VecDeque<u32> = VecDeque::new();
        let mut s = 7u64;
        for i in 0..200_000u32 {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            match (s >> 60) % 4 {
                0 | 1 => {
                    r.push_back(i);
                    d.push_back(i);
                }
                2 => assert_eq!(r.pop_front(), d.pop_front()),
                _ => {
                    let keep = (s >> 40) & 1 == 0;
                    let got = r.rotate_front(|e| {
                        *e += 1;
                        keep
                    });
                    let want = d.pop_front().map(|e| e + 1);
                    if let (Some(e), true) = (want, keep) {
                        d.push_back(e);
                    }
                    assert_eq!(got, want);
                }
            }
            assert_eq!(r.len(), d.len());
            assert_eq!(r.front_mut().copied(), d.front().copied());
        }
    }

    #[test]
    fn pop_back_front_and_for_each_mut() {
        let mut r: Ring<u32> = Ring::default();
        let mut d: VecDeque<u32> = VecDeque::new();
        for i in 0..1000u32 {
            if i % 3 != 0 {
                r.push_back(i);
                d.push_back(i);
            }
            if i % 7 == 0 {
                assert_eq!(r.pop_back(), d.pop_back());
            }
            if i % 11 == 0 {
                assert_eq!(r.pop_front(), d.pop_front());
            }
            assert_eq!(r.back(), d.back());
            assert_eq!(r.front(), d.front());
        }
        r.for_each_mut(|e| *e += 1);
        d.iter_mut().for_each(|e| *e += 1);
        let mut got: Vec<u32> = Vec::new();
        while let Some(e) = r.pop_front() {
            got.push(e);
        }
        assert_eq!(got, d.into_iter().collect::<Vec<_>>());
    }

    #[test]
    fn insert_and_rotate_many_match_a_vecdeque() {
        let mut r: Ring<(u32, u32)> = Ring::default();
        let mut d: VecDeque<(u32, u32)> = VecDeque::new();
        let mut s = 11u64;
        for i in 0..50_000u32 {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            if (s >> 61) < 3 {
                let idx = ((s >> 20) as usize) % (d.len() + 1);
                let e = (i, 1 + (s >> 40) as u32 % 4);
                r.insert(idx, e);
                d.insert(idx, e);
            } else {
                let n = (s >> 30) % 6;
                let mut gone_r = Vec::new();
                let turns = r.rotate_many(
                    n,
                    |e| {
                        e.1 -= 1;
                        e.1 > 0
                    },
                    |k, e| gone_r.push((k, *e)),
                );
                let mut gone_d = Vec::new();
                let mut k = 0;
                while k < n {
                    let Some(mut e) = d.pop_front() else { break };
                    e.1 -= 1;
                    if e.1 > 0 {
                        d.push_back(e);
                    } else {
                        gone_d.push((k, e));
                    }
                    k += 1;
                }
                assert_eq!(turns, k);
                assert_eq!(gone_r, gone_d);
            }
            assert_eq!(r.len(), d.len());
            assert_eq!(r.front(), d.front());
        }
    }

    #[test]
    fn rotating_a_full_ring_keeps_every_element() {
        let mut r: Ring<u32> = Ring::default();
        for i in 0..8 {
            r.push_back(i);
        }
        assert_eq!(r.len(), r.buf.len(), "full");
        for _ in 0..20 {
            r.rotate_front(|_| true);
        }
        let mut out = Vec::new();
        while let Some(e) = r.pop_front() {
            out.push(e);
        }
        assert_eq!(out, vec![4, 5, 6, 7, 0, 1, 2, 3]);
    }
}
