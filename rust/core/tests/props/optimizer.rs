//! The optimizer's edge counters against each other and against the shared
//! plan that really runs (plan.rs), the F1 paper's worked examples, and
//! WeaveShare's guarantees under its own cost (eq. 1).

use proptest::prelude::*;
use slidewise_core::optimizer::weaveshare::{partition_cost, weaveshare, Acq, Options};
use slidewise_core::optimizer::{bitset, classes, count_edges, fast, Method, Slide};
use slidewise_core::plan::SharedPlan;

const METHODS: [Method; 4] = [Method::BitSet, Method::F1, Method::F1Memo, Method::Fast];

fn all_equal(qs: &[Slide]) -> u128 {
    let plan = SharedPlan::build(qs).unwrap();
    let want = plan.edges_per_period() as u128;
    for m in METHODS {
        let c = count_edges(qs, m).unwrap();
        assert_eq!(c.edges, want, "{m:?} on {qs:?}");
        assert_eq!(c.composite, plan.composite as u128, "{m:?} on {qs:?}");
    }
    want
}

/// Whether the shared plan of `qs` is within `MAX_EDGES` (a drawn set of
/// slides can have a composite slide of tens of millions of rows: the plan
/// refuses it with a message, and there is nothing to compare). Any other
/// refusal fails the case.
fn within_the_edge_bound(qs: &[Slide]) -> Result<bool, TestCaseError> {
    match SharedPlan::build(qs) {
        Ok(_) => Ok(true),
        Err(e) => {
            let msg = format!("{e:?}");
            prop_assert!(msg.contains("more than the bound"), "{}", msg);
            Ok(false)
        }
    }
}

#[test]
fn paper_example_2_and_3_no_fragments() {
    // Slides 2, 3, 4, 5, 6, ranges equal to the slides (no fragments): a
    // composite slide of 60 with 44 edges (Examples 2 and 3, Figure 2).
    let qs: Vec<Slide> = [2, 3, 4, 5, 6].iter().map(|&s| Slide::count(s, s)).collect();
    assert_eq!(all_equal(&qs), 44);
    // Ranges that are multiples of the slides do not add fragments either.
    let qs: Vec<Slide> = [2, 3, 4, 5, 6].iter().map(|&s| Slide::count(3 * s, s)).collect();
    assert_eq!(all_equal(&qs), 44);
}

#[test]
fn paper_example_4_and_6_with_fragments() {
    // Slides 3, 4, 6, 9; slide 4 has fragments (3, 1) and slide 6 (2, 4):
    // Pairs f2 = range mod slide, f1 = slide - f2 (§2), so ranges 5 and 10.
    // Composite 36, 27 edges (Examples 4 and 6, Figure 4).
    let qs = [Slide::count(3, 3), Slide::count(5, 4), Slide::count(10, 6), Slide::count(9, 9)];
    assert_eq!(all_equal(&qs), 27);
    assert_eq!(count_edges(&qs, Method::F1).unwrap().composite, 36);
}

#[test]
fn bitset_refuses_beyond_its_bound() {
    let qs = [Slide::count(1_000_003, 1_000_003), Slide::count(999_983, 999_983)];
    let e = count_edges(&qs, Method::BitSet).unwrap_err().to_string();
    assert!(e.contains("bound") && e.contains(&bitset::MAX_BITS.to_string()), "{e}");
    // The other methods do not need the bits.
    let c = count_edges(&qs, Method::F1).unwrap();
    assert_eq!(c.edges, 1_000_003 + 999_983 - 1);
}

#[test]
fn fast_handles_what_f1_refuses() {
    // 60 pairwise non-dividing slides: F1 has up to 2^60 groups; the
    // composite still fits 128 bits? lcm(61..=120) does not, so the rate.
    let qs: Vec<Slide> = (61..=120).map(|s| Slide::count(s, s)).collect();
    let c = classes(&qs).unwrap();
    assert!(count_edges(&qs, Method::F1).is_err());
    let r = fast::rate(&c).unwrap();
    // Density of the multiples of 61..120: between the largest single one
    // and the union bound.
    let union_bound: f64 = (61..=120).map(|s| 1.0 / s as f64).sum();
    assert!(r > 1.0 / 61.0 && r < union_bound, "{r}");
    // Slides 31..=60: the composite fits; fast is exact against a sieve of
    // the density computed by F1 on the residue-free halves. Check against
    // a brute-force count over one composite slide of a subset that fits.
    let qs: Vec<Slide> = (16..=30).map(|s| Slide::count(s, s)).collect();
    let l = count_edges(&qs, Method::Fast).unwrap();
    let f = count_edges(&qs, Method::F1).unwrap();
    assert_eq!(l, f);
}

fn slide_strategy(max_slide: u64, with_fragments: bool) -> impl Strategy<Value = Slide> {
    (1..=max_slide, 0u64..4, 0u64..=max_slide, any::<bool>()).prop_map(move |(s, mult, frag, time)| {
        let r = s * mult.max(1) + if with_fragments { frag % s } else { 0 };
        if time { Slide::time(r, s) } else { Slide::count(r, s) }
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn methods_agree_no_fragments(qs in prop::collection::vec(slide_strategy(24, false), 1..7)) {
        if within_the_edge_bound(&qs)? {
            all_equal(&qs);
        }
    }

    #[test]
    fn methods_agree_with_fragments(qs in prop::collection::vec(slide_strategy(24, true), 1..7)) {
        if within_the_edge_bound(&qs)? {
            all_equal(&qs);
        }
    }

    /// More classes than "fast" sends to F1 at once, so the prime split runs.
    #[test]
    fn fast_equals_f1_on_larger_sets(qs in prop::collection::vec(slide_strategy(40, true), 8..14)) {
        let f = count_edges(&qs, Method::F1);
        let g = count_edges(&qs, Method::Fast);
        match (f, g) {
            (Ok(f), Ok(g)) => prop_assert_eq!(f, g),
            (Err(_), _) => {} // beyond F1's term budget or 128 bits
            (Ok(f), Err(e)) => prop_assert!(false, "fast failed where F1 gave {f:?}: {e}"),
        }
    }
}

fn acq_strategy() -> impl Strategy<Value = Acq> {
    (slide_strategy(12, true), 1u32..6, 0u64..2).prop_map(|(s, w, key)| Acq { slide: s, omega: w as f64, key })
}

/// All set partitions of 0..n respecting keys (n small).
fn partitions(acqs: &[Acq]) -> Vec<Vec<Vec<usize>>> {
    fn go(i: usize, acqs: &[Acq], cur: &mut Vec<Vec<usize>>, out: &mut Vec<Vec<Vec<usize>>>) {
        if i == acqs.len() {
            out.push(cur.clone());
            return;
        }
        for g in 0..cur.len() {
            if acqs[cur[g][0]].key == acqs[i].key {
                cur[g].push(i);
                go(i + 1, acqs, cur, out);
                cur[g].pop();
            }
        }
        cur.push(vec![i]);
        go(i + 1, acqs, cur, out);
        cur.pop();
    }
    let mut out = Vec::new();
    go(0, acqs, &mut Vec::new(), &mut out);
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 120, ..ProptestConfig::default() })]

    #[test]
    fn weaveshare_guarantees(acqs in prop::collection::vec(acq_strategy(), 1..7), lam in prop::sample::select(vec![0.0, 0.05, 0.3, 1.0, 5.0])) {
        let opt = Options::new(lam, Method::F1);
        let p = weaveshare(&acqs, &opt).unwrap();
        // A partition of the queries, each group of one key.
        let mut seen: Vec<usize> = p.trees.iter().flat_map(|t| t.members.clone()).collect();
        seen.sort_unstable();
        prop_assert_eq!(seen, (0..acqs.len()).collect::<Vec<_>>());
        for t in &p.trees {
            prop_assert!(t.members.iter().all(|&i| acqs[i].key == t.key));
        }
        let groups: Vec<Vec<usize>> = p.trees.iter().map(|t| t.members.clone()).collect();
        let cost = partition_cost(&acqs, &groups, &opt).unwrap();
        let tol = 1e-9 * (1.0 + cost.abs());
        prop_assert!((cost - p.cost).abs() <= tol, "reported {} recomputed {}", p.cost, cost);
        // Never worse than no sharing ...
        let singles: Vec<Vec<usize>> = (0..acqs.len()).map(|i| vec![i]).collect();
        let none = partition_cost(&acqs, &singles, &opt).unwrap();
        prop_assert!((none - p.no_share_cost).abs() <= tol);
        prop_assert!(cost <= none + tol, "{} > no-share {}", cost, none);
        // ... nor than one tree per key ...
        let mut per_key: Vec<Vec<usize>> = Vec::new();
        for k in [0u64, 1] {
            let g: Vec<usize> = (0..acqs.len()).filter(|&i| acqs[i].key == k).collect();
            if !g.is_empty() { per_key.push(g); }
        }
        let one = partition_cost(&acqs, &per_key, &opt).unwrap();
        prop_assert!(cost <= one + tol, "{} > one tree {}", cost, one);
        // ... and never better than the optimum (brute force).
        let best = partitions(&acqs).iter().map(|g| partition_cost(&acqs, g, &opt).unwrap()).fold(f64::INFINITY, f64::min);
        prop_assert!(cost >= best - tol);
        // No remaining pair of trees would lower the cost (greedy's stop rule).
        for i in 0..groups.len() {
            for j in i + 1..groups.len() {
                if acqs[groups[i][0]].key != acqs[groups[j][0]].key { continue; }
                let mut merged: Vec<Vec<usize>> = groups.iter().enumerate().filter(|&(k, _)| k != i && k != j).map(|(_, g)| g.clone()).collect();
                merged.push(groups[i].iter().chain(&groups[j]).copied().collect());
                let c2 = partition_cost(&acqs, &merged, &opt).unwrap();
                prop_assert!(c2 >= cost - tol, "merging {:?} and {:?} lowers {} to {}", groups[i], groups[j], cost, c2);
            }
        }
        // Every exact method gives the same plan.
        for m in [Method::BitSet, Method::F1Memo, Method::Fast] {
            let q = weaveshare(&acqs, &Options::new(lam, m)).unwrap();
            let g2: Vec<Vec<usize>> = q.trees.iter().map(|t| t.members.clone()).collect();
            prop_assert_eq!(&g2, &groups);
        }
    }
}

#[test]
fn identical_queries_share_when_input_flows() {
    let acqs: Vec<Acq> = (0..10).map(|_| Acq { slide: Slide::count(10, 5), omega: 2.0, key: 0 }).collect();
    let p = weaveshare(&acqs, &Options::new(1.0, Method::F1)).unwrap();
    assert_eq!(p.trees.len(), 1);
    assert!((p.no_share_cost - p.cost - 9.0).abs() < 1e-9);
    // With no input (λ = 0) sharing saves nothing: no merge.
    let p = weaveshare(&acqs, &Options::new(0.0, Method::F1)).unwrap();
    assert_eq!(p.trees.len(), 10);
}
