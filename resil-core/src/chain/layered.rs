//! The node every pattern's layer is: its part, or none, around the node
//! inside it. Each pattern's `layer.rs` says what its node does
//! ([`Node`](super::Node), [`SyncNode`](super::SyncNode)); how a part
//! wraps the next node ([`Wrap`](super::Wrap)), and how the node prints,
//! are said here once.

use std::fmt;

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
/// node (and `Option` of it, as the same node with or without the part):
/// see `layer_part!`.
pub trait LayerPart {
    /// The node's name, for `Debug`.
    const NODE: &'static str;
}

/// Makes a pattern's part a [`LayerPart`], wrapped (as itself, or as
/// `Option` of itself) around the node inside it as its [`Layered`] node:
/// `layer_part!("RetryNode", impl<R, C> for RetryPart<R, C>)`.
///
/// A macro rather than a blanket implementation of [`Wrap`](super::Wrap)
/// over [`LayerPart`], so that `Wrap` stays open to parts of other shapes
/// (the fault's, a fallback's, a thread pool's, a `tower` slot's) here and
/// in other crates.
macro_rules! layer_part {
    ($node:literal, impl<$($g:ident),*> for $part:ty) => {
        impl<$($g),*> $crate::chain::LayerPart for $part {
            const NODE: &'static str = $node;
        }

        impl<$($g,)* N> $crate::chain::Wrap<N> for $part {
            type Node = $crate::chain::Layered<$part, N>;

            #[inline(always)]
            fn wrap(self, next: N) -> Self::Node {
                $crate::chain::Layered {
                    part: Some(self),
                    next,
                }
            }
        }

        impl<$($g,)* N> $crate::chain::Wrap<N> for Option<$part> {
            type Node = $crate::chain::Layered<$part, N>;

            #[inline(always)]
            fn wrap(self, next: N) -> Self::Node {
                $crate::chain::Layered { part: self, next }
            }
        }
    };
}

pub(crate) use layer_part;

impl<P: LayerPart + fmt::Debug, N> fmt::Debug for Layered<P, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(P::NODE)
            .field("part", &self.part)
            .finish_non_exhaustive()
    }
}
