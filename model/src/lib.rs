//! Reference models of parkline: stateright models of the delivery and read protocols, each with
//! a plain transition function usable as the oracle in differential tests and fuzz targets, and
//! of operator requests to a live session.
//! This crate does no I/O.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod delivery;
pub mod ops;
pub mod read;
pub mod search;

/// What the delivery and read models' unit tests share.
#[cfg(test)]
mod test_support {
    use std::collections::BTreeSet;
    use std::fmt::Debug;

    use stateright::Model;

    /// The state `steps` lead to from the first initial state of `model`, each step enabled.
    pub(crate) fn state_after<M: Model>(model: &M, steps: &[M::Action]) -> M::State
    where
        M::Action: Clone + Debug,
    {
        let mut state = model.init_states().remove(0);
        for action in steps {
            state = model
                .next_state(&state, action.clone())
                .unwrap_or_else(|| panic!("{action:?} is enabled"));
        }
        state
    }

    /// The names `name` gives `all` are distinct command-line words (lowercase letters and
    /// dashes), `from_name` gives each variant back from its name, and no variant from another
    /// word.
    pub(crate) fn assert_variant_names<V: Copy + PartialEq + Debug>(
        all: &[V],
        name: fn(V) -> &'static str,
        from_name: fn(&str) -> Option<V>,
    ) {
        let names: BTreeSet<&str> = all.iter().map(|&v| name(v)).collect();
        assert_eq!(names.len(), all.len(), "two variants share a name");
        for &variant in all {
            let name = name(variant);
            assert!(
                !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'),
                "{name:?}"
            );
            assert_eq!(from_name(name), Some(variant));
        }
        assert_eq!(from_name("xyzzy"), None);
    }
}
