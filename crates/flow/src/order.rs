//! The order the flow table and the defragmenter keep over their slots (last use, or
//! creation): a doubly linked list threaded through the slots by index, so that the
//! oldest entry is found, and any entry moved to the back or taken out, in constant time
//! and without allocating.

/// No slot.
pub(crate) const NIL: u32 = u32::MAX;

/// A slot's neighbours in an [`Order`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Links {
    prev: u32,
    next: u32,
}

impl Links {
    /// Not in a list.
    pub(crate) const NONE: Links = Links {
        prev: NIL,
        next: NIL,
    };
}

impl Default for Links {
    fn default() -> Links {
        Links::NONE
    }
}

/// A slot that can be in an [`Order`].
pub(crate) trait Linked {
    fn links(&self) -> &Links;
    fn links_mut(&mut self) -> &mut Links;
}

/// The list: its first (oldest) and last slot.
/// Links kept in a vector of their own (parallel to the slots) are a list too: the
/// flow table keeps them apart from its large slots so that moving a flow to the back
/// touches a few bytes of a compact array, not the neighbours' slots.
impl Linked for Links {
    #[inline]
    fn links(&self) -> &Links {
        self
    }

    #[inline]
    fn links_mut(&mut self) -> &mut Links {
        self
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Order {
    head: u32,
    tail: u32,
}

impl Order {
    pub(crate) const EMPTY: Order = Order {
        head: NIL,
        tail: NIL,
    };

    /// The oldest slot.
    #[inline]
    pub(crate) fn first(&self) -> Option<u32> {
        (self.head != NIL).then_some(self.head)
    }

    /// The slot after `idx`.
    #[inline]
    pub(crate) fn after<T: Linked>(slots: &[T], idx: u32) -> Option<u32> {
        let next = slots[idx as usize].links().next;
        (next != NIL).then_some(next)
    }

    /// Appends slot `idx`, which must not be in the list.
    pub(crate) fn push_back<T: Linked>(&mut self, slots: &mut [T], idx: u32) {
        debug_assert_eq!(*slots[idx as usize].links(), Links::NONE);
        let tail = self.tail;
        *slots[idx as usize].links_mut() = Links {
            prev: tail,
            next: NIL,
        };
        match tail {
            NIL => self.head = idx,
            t => slots[t as usize].links_mut().next = idx,
        }
        self.tail = idx;
    }

    /// Takes slot `idx`, which must be in the list, out of it.
    pub(crate) fn remove<T: Linked>(&mut self, slots: &mut [T], idx: u32) {
        let Links { prev, next } = *slots[idx as usize].links();
        match prev {
            NIL => self.head = next,
            p => slots[p as usize].links_mut().next = next,
        }
        match next {
            NIL => self.tail = prev,
            n => slots[n as usize].links_mut().prev = prev,
        }
        *slots[idx as usize].links_mut() = Links::NONE;
    }

    /// Moves slot `idx`, which must be in the list, to the back.
    #[inline]
    pub(crate) fn move_to_back<T: Linked>(&mut self, slots: &mut [T], idx: u32) {
        if self.tail != idx {
            self.remove(slots, idx);
            self.push_back(slots, idx);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct S(Links);

    impl Linked for S {
        fn links(&self) -> &Links {
            &self.0
        }
        fn links_mut(&mut self) -> &mut Links {
            &mut self.0
        }
    }

    fn walk(order: &Order, slots: &[S]) -> Vec<u32> {
        let mut out = Vec::new();
        let mut at = order.first();
        while let Some(i) = at {
            out.push(i);
            at = Order::after(slots, i);
        }
        // The back links agree with the forward ones.
        let mut back = Vec::new();
        let mut at = order.tail;
        while at != NIL {
            back.push(at);
            at = slots[at as usize].0.prev;
        }
        back.reverse();
        assert_eq!(out, back);
        out
    }

    #[test]
    fn keeps_the_order_of_a_vec_through_every_operation() {
        let mut slots: Vec<S> = (0..6).map(|_| S::default()).collect();
        let mut order = Order::EMPTY;
        let mut model: Vec<u32> = Vec::new();
        // A fixed pseudo-random sequence of operations, checked against a Vec.
        let mut x = 12345u32;
        for _ in 0..2000 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let idx = (x >> 16) % 6;
            match (x >> 8) % 3 {
                0 if !model.contains(&idx) => {
                    order.push_back(&mut slots, idx);
                    model.push(idx);
                }
                1 if model.contains(&idx) => {
                    order.remove(&mut slots, idx);
                    model.retain(|&i| i != idx);
                    assert_eq!(slots[idx as usize].0, Links::NONE);
                }
                2 if model.contains(&idx) => {
                    order.move_to_back(&mut slots, idx);
                    model.retain(|&i| i != idx);
                    model.push(idx);
                }
                _ => {}
            }
            assert_eq!(walk(&order, &slots), model);
            assert_eq!(order.first(), model.first().copied());
        }
    }
}
