//! The node every pattern's layer is: its part, or none, around the node
//! inside it. Each pattern's `layer.rs` says what its node does
//! ([`Node`](super::Node), [`SyncNode`](super::SyncNode)); how a part
//! wraps the next node, and how the node prints, are said here once.

use std::fmt;

use super::Wrap;

/// A pattern's layer around `N`: its part `P`, or none (a layer a face has
/// or not at run time: one test per call when it has not), and the node
/// inside it.
///
/// Each pattern names its own (`RetryNode`, `CircuitBreakerNode`, ...).
#[derive(Clone)]
pub struct Layered<P, N> {
    pub(crate) part: Option<P>,
    pub(crate) next: N,
}

/// A pattern's part, wrapped around the node inside it as a [`Layered`]
/// node (and `Option` of it, as the same node with or without the part).
pub trait LayerPart {
    /// The node's name, for `Debug`.
    const NODE: &'static str;
}

impl<P: LayerPart, N> Wrap<N> for P {
    type Node = Layered<P, N>;

    #[inline(always)]
    fn wrap(self, next: N) -> Self::Node {
        Layered {
            part: Some(self),
            next,
        }
    }
}

impl<P: LayerPart, N> Wrap<N> for Option<P> {
    type Node = Layered<P, N>;

    #[inline(always)]
    fn wrap(self, next: N) -> Self::Node {
        Layered { part: self, next }
    }
}

impl<P: LayerPart + fmt::Debug, N> fmt::Debug for Layered<P, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(P::NODE)
            .field("part", &self.part)
            .finish_non_exhaustive()
    }
}
