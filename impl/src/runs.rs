//! Seq lists written as runs (spec/mirror.md M3): `[[first, last], ...]`, the maximal ranges of
//! consecutive seqs of a strictly increasing list, so a contiguous batch or an all-delivered
//! settle is one pair whatever its size.

use crate::types::Seq;

/// The maximal runs of `seqs`, which must be strictly increasing.
pub(crate) fn runs_of(seqs: &[Seq]) -> Vec<[u64; 2]> {
    debug_assert!(
        seqs.windows(2).all(|pair| pair[0] < pair[1]),
        "seqs not increasing"
    );
    let mut runs: Vec<[u64; 2]> = Vec::new();
    for seq in seqs {
        match runs.last_mut() {
            Some(run) if run[1].checked_add(1) == Some(seq.0) => run[1] = seq.0,
            _ => runs.push([seq.0, seq.0]),
        }
    }
    runs
}

/// The seqs `runs` names, in order, if they are canonical (each run `first <= last`, each next
/// run starting past the seq after the last one) and name at most `limit` seqs: a file cannot
/// make the reader build a list longer than the state it names seqs of.
///
/// # Errors
///
/// Why the runs are not the runs of at most `limit` seqs.
pub(crate) fn seqs_of(runs: &[[u64; 2]], limit: usize) -> Result<Vec<Seq>, String> {
    //= spec/mirror.md#m3-records-and-the-state-transition
    //# A reader MUST reject runs that are not canonical (a run ending before it starts, a run not
    //# past the one before it by a gap) and runs that name more seqs than the list they index
    //# holds, plus one (the in-flight batch for a settle, the parked list for a batch, the dead
    //# letters for a redrive or discard), so a file cannot make it build a list longer than the
    //# state it names seqs of; the check then says which seq is wrong.
    let mut seqs = Vec::new();
    let mut after: Option<u64> = None;
    for &[first, last] in runs {
        if first > last {
            return Err(format!("run [{first},{last}] ends before it starts"));
        }
        if after.is_some_and(|after| first <= after.saturating_add(1)) {
            return Err(format!(
                "run [{first},{last}] is not past the run before it"
            ));
        }
        let len = usize::try_from(last - first)
            .ok()
            .and_then(|len| len.checked_add(1))
            .filter(|len| seqs.len().saturating_add(*len) <= limit);
        if len.is_none() {
            return Err(format!(
                "runs name more than the {limit} seqs they can name"
            ));
        }
        seqs.extend((first..=last).map(Seq));
        after = Some(last);
    }
    Ok(seqs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_round_trip_and_only_canonical_runs_read() {
        //= spec/mirror.md#m3-records-and-the-state-transition
        //= type=test
        //# A reader MUST reject runs that are not canonical (a run ending before it starts, a run not
        //# past the one before it by a gap) and runs that name more seqs than the list they index
        //# holds, plus one (the in-flight batch for a settle, the parked list for a batch, the dead
        //# letters for a redrive or discard), so a file cannot make it build a list longer than the
        //# state it names seqs of; the check then says which seq is wrong.
        let seqs: Vec<Seq> = [1, 2, 3, 5, 9, 10].into_iter().map(Seq).collect();
        let runs = runs_of(&seqs);
        assert_eq!(runs, [[1, 3], [5, 5], [9, 10]]);
        assert_eq!(seqs_of(&runs, 6), Ok(seqs));
        assert!(seqs_of(&runs, 5).is_err());
        for bad in [
            &[[3, 2]][..],
            &[[1, 2], [3, 4]],
            &[[5, 6], [1, 2]],
            &[[1, 2], [2, 3]],
        ] {
            assert!(seqs_of(bad, 100).is_err(), "{bad:?}");
        }
        assert_eq!(seqs_of(&[], 0), Ok(Vec::new()));
        assert!(seqs_of(&[[0, u64::MAX]], usize::MAX).is_err());
    }
}
