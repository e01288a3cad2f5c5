//! Why a call being dropped unfinished was given up on: a mark on the
//! thread while a time limiter that timed out, or a request's deadline that
//! ran out, drops the call.
//!
//! What the call holds is dropped under the mark: the permits of the layers
//! inside the one that gave up, and of the chains inside the call itself (an
//! annotated function that it calls). A permit dropped unfinished reads the
//! mark, out of line, to tell a call given up on from one its caller
//! cancelled: an adaptive bulkhead counts the first a drop, a breaker counts
//! a call the deadline cut short. Nothing on a call's healthy path reads or
//! writes it.

use std::cell::Cell;
use std::marker::PhantomData;

/// Who gave up on the call being dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GivenUp {
    /// A time limiter's timeout.
    Timeout,
    /// A request's deadline ran out.
    Deadline,
}

thread_local! {
    static DROPPING: Cell<Option<GivenUp>> = const { Cell::new(None) };
}

/// Drops `call` under the mark `why`: whatever `call` holds and drops sees
/// [`given_up`] return `Some(why)`. The mark before is back afterwards, a
/// panic in a drop included.
#[cold]
pub(crate) fn drop_given_up(why: GivenUp, call: impl FnOnce()) {
    let _mark = Mark::set(why);
    call();
}

/// Why the call now being dropped was given up on, if it was: `None` when
/// its caller dropped it (or when read outside such a drop).
pub(crate) fn given_up() -> Option<GivenUp> {
    DROPPING.try_with(Cell::get).ok().flatten()
}

/// The mark while it lives, the one before restored when dropped.
struct Mark {
    previous: Option<GivenUp>,
    // The thread-local is this thread's: the mark must drop here.
    _thread: PhantomData<*const ()>,
}

impl Mark {
    fn set(why: GivenUp) -> Mark {
        Mark {
            previous: DROPPING.try_with(|c| c.replace(Some(why))).ok().flatten(),
            _thread: PhantomData,
        }
    }
}

impl Drop for Mark {
    fn drop(&mut self) {
        let _ = DROPPING.try_with(|c| c.set(self.previous));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mark_lasts_while_the_call_drops_and_nests() {
        assert_eq!(given_up(), None);
        drop_given_up(GivenUp::Deadline, || {
            assert_eq!(given_up(), Some(GivenUp::Deadline));
            drop_given_up(GivenUp::Timeout, || {
                assert_eq!(given_up(), Some(GivenUp::Timeout));
            });
            assert_eq!(given_up(), Some(GivenUp::Deadline));
        });
        assert_eq!(given_up(), None);
    }

    #[test]
    fn a_panic_in_the_drop_leaves_no_mark_behind() {
        let panicked = std::panic::catch_unwind(|| {
            drop_given_up(GivenUp::Timeout, || panic!("a drop that panics"));
        });
        assert!(panicked.is_err());
        assert_eq!(given_up(), None);
    }
}
