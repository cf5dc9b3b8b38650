//! The evaluator's stack check: where the stack pointer is against the bounds of the stack
//! being run on, one subtraction and one compare per evaluated node.
//!
//! The analyzer bounds an expression's depth and `max_depth` bounds calls, but not every thread
//! that may run a program has room for that many frames (a debug build's frames are kilobytes).
//! So before every node, [`Interp::eval`] checks that the stack pointer lies inside
//! [`StackBounds`]: at least [`STACK_RED_ZONE`] above the end of the stack, and not above where
//! the bounds were taken. Outside them, [`Interp::with_room`] runs the node on a stack with that
//! room, grown by `stacker` if need be, with the bounds of that stack, and puts the caller's back
//! after.
//!
//! Invariant: a pointer outside the bounds only costs a slow path, never a missed check. So code
//! that grows a segment elsewhere (a lazy seq's realization, `walk`) need not know about these
//! bounds: the first node evaluated on that segment sees a pointer outside them and takes its
//! own.

use super::Interp;

/// Stack left below every evaluated node: room for the frames between two nodes (a builtin's,
/// the call into a lambda) even in a debug build.
pub(super) const STACK_RED_ZONE: usize = 256 * 1024;
/// How much stack `stacker` maps when the red zone is not left.
pub(super) const STACK_SEGMENT: usize = 2 * 1024 * 1024;

/// Where on the current stack a node may run without a check: stack pointers from `floor` to
/// `floor + span`.
#[derive(Clone, Copy, Debug)]
pub(super) struct StackBounds {
    floor: usize,
    span: usize,
}

impl StackBounds {
    /// No bounds: every node is outside and takes the bounds of its own stack first.
    pub(super) const NONE: StackBounds = StackBounds {
        floor: usize::MAX,
        span: 0,
    };

    /// The bounds of the stack being run on, from the caller's frame down to
    /// [`STACK_RED_ZONE`] above its end: they hold for the frames the caller calls (inlined,
    /// so that "here" is the caller's frame; a node evaluated in that very frame may fall a
    /// few bytes outside and take the slow path once). No slack above: the memory just above
    /// a `stacker` segment's frames may be another segment. Where the end is unknown, empty:
    /// every node then takes the slow path, whose `stacker` segment has an end it knows.
    #[inline(always)]
    pub(super) fn here() -> StackBounds {
        let sp = stack_position();
        match stacker::remaining_stack() {
            Some(left) => {
                let floor = sp.saturating_sub(left).saturating_add(STACK_RED_ZONE);
                StackBounds {
                    floor,
                    span: sp.saturating_sub(floor),
                }
            }
            None => StackBounds::NONE,
        }
    }

    /// Whether the caller runs inside these bounds.
    #[inline(always)]
    pub(super) fn hold(self) -> bool {
        self.contain(stack_position())
    }

    /// Whether `sp` is inside these bounds. Below the floor the subtraction wraps to more than
    /// any span; above the top it is more than the span.
    #[inline(always)]
    fn contain(self, sp: usize) -> bool {
        sp.wrapping_sub(self.floor) <= self.span
    }
}

impl Interp<'_> {
    /// Runs `f` on a stack with [`STACK_RED_ZONE`] bytes left (grown if not), under that
    /// stack's bounds; the caller's bounds are back when it returns.
    pub(super) fn with_room<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let saved = self.stack_bounds;
        let r = stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || {
            self.stack_bounds = StackBounds::here();
            f(self)
        });
        self.stack_bounds = saved;
        r
    }
}

/// Where the stack pointer is, near enough: the address of a local of the caller's frame.
/// (`psm::stack_pointer` is a call, which made the node dispatcher save its arguments across
/// it.)
#[inline(always)]
fn stack_position() -> usize {
    let marker = 0u8;
    std::ptr::addr_of!(marker).addr()
}

#[cfg(test)]
mod tests {
    use super::StackBounds;

    #[test]
    fn a_pointer_below_the_floor_or_above_the_top_is_outside() {
        let b = StackBounds {
            floor: 0x7000,
            span: 0x1000,
        };
        assert!(!b.contain(0x6fff));
        assert!(b.contain(0x7000));
        assert!(b.contain(0x8000));
        assert!(
            !b.contain(0x8001),
            "a segment above the bounds is checked too"
        );
        assert!(!b.contain(0));
        assert!(!b.contain(usize::MAX));
        assert!(
            !StackBounds::NONE.contain(0x7000),
            "an unknown end checks every node"
        );
    }

    #[inline(never)]
    fn held_in_a_callee(b: StackBounds) -> bool {
        b.hold()
    }

    #[test]
    fn bounds_taken_here_hold_in_callees_and_leave_the_red_zone() {
        let b = StackBounds::here();
        assert!(held_in_a_callee(b));
        if let Some(left) = stacker::remaining_stack() {
            assert!(left > super::STACK_RED_ZONE);
            assert!(b.span < left);
        }
    }
}
