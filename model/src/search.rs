//! The shortest path to a property's discovery, by a breadth-first search of our own.
//!
//! stateright 0.31 reports, for a model with several properties, whichever path it evaluated last
//! (measured here: a 10-step path where 0.30.2 reported the 2-step one; `finish_when(AnyFailures)`
//! does not change it), not the shortest one. Counterexamples are read by people, so
//! `parkline check` and the variant tests print the shortest path this module finds instead.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

use stateright::{Expectation, Model, Property};

/// One step of a path: the state reached, and the action that reached it (`None` for the initial
/// state).
pub type Step<M> = (<M as Model>::State, Option<<M as Model>::Action>);

/// A visited state with its parent's index and the action from the parent.
type Visited<M> = (<M as Model>::State, Option<(usize, <M as Model>::Action)>);

/// The shortest path from an initial state to a discovery of `property`: a state where an
/// `always` condition is false or a `sometimes` condition is true; for `eventually`, a terminal
/// state reached through states none of which satisfies the condition. `None` when the whole
/// reachable state space has no such path.
///
/// Explores breadth first and keeps every visited state in memory: use it on small bounds, or on
/// a model already known to have the discovery (it stops at the first one).
///
/// # Example
///
/// ```
/// use parkline_model::delivery::{Bounds, DeliveryModel, Variant, D1};
/// use parkline_model::search::shortest_path;
/// use stateright::Model;
/// let model = DeliveryModel::new(Bounds::generated(2, 6, 0, 0), Variant::PopFront);
/// let path = shortest_path(&model, &model.property(D1)).expect("pop-front is caught");
/// assert_eq!(path.len(), 4); // init, park, park, boundary (one line of the two)
/// ```
pub fn shortest_path<M>(model: &M, property: &Property<M>) -> Option<Vec<Step<M>>>
where
    M: Model,
    M::State: Clone + Eq + Hash,
    M::Action: Clone,
{
    let condition = property.condition;
    let found = |state: &M::State| match property.expectation {
        Expectation::Always => !condition(model, state),
        Expectation::Sometimes => condition(model, state),
        Expectation::Eventually => false,
    };
    // Each visited state: its parent index and the action from the parent.
    let mut states: Vec<Visited<M>> = Vec::new();
    let mut index: HashMap<M::State, usize> = HashMap::new();
    let mut queue = VecDeque::new();
    for init in model.init_states() {
        if property.expectation == Expectation::Eventually && condition(model, &init) {
            continue;
        }
        if index.contains_key(&init) {
            continue;
        }
        index.insert(init.clone(), states.len());
        queue.push_back(states.len());
        states.push((init, None));
    }
    let mut actions = Vec::new();
    while let Some(at) = queue.pop_front() {
        if found(&states[at].0) {
            return Some(rebuild::<M>(states, at));
        }
        model.actions(&states[at].0, &mut actions);
        let mut terminal = true;
        for action in actions.drain(..) {
            let Some(next) = model.next_state(&states[at].0, action.clone()) else {
                continue;
            };
            if !model.within_boundary(&next) {
                continue;
            }
            terminal = false;
            if property.expectation == Expectation::Eventually && condition(model, &next) {
                continue;
            }
            if index.contains_key(&next) {
                continue;
            }
            index.insert(next.clone(), states.len());
            queue.push_back(states.len());
            states.push((next, Some((at, action))));
        }
        if terminal && property.expectation == Expectation::Eventually {
            return Some(rebuild::<M>(states, at));
        }
    }
    None
}

fn rebuild<M: Model>(mut states: Vec<Visited<M>>, mut at: usize) -> Vec<Step<M>>
where
    M::State: Clone,
{
    let mut path = Vec::new();
    loop {
        let state = states[at].0.clone();
        match states[at].1.take() {
            Some((from, action)) => {
                path.push((state, Some(action)));
                at = from;
            }
            None => {
                path.push((state, None));
                break;
            }
        }
    }
    path.reverse();
    path
}
