//! WeaveShare (F1 paper §2; Guirguis et al., CIKM'11): partition ACQs into
//! execution trees (shared plans) to minimise eq. 1,
//!
//!   C = m·λ + Σ_i E_i·Ω_i,
//!
//! m trees, λ input tuples per second (every tree's partial aggregator sees
//! every tuple), E_i tree i's edge rate (partials per second: its edges per
//! composite slide over the composite slide's length) and Ω_i its overlap
//! factor (final-aggregation operations per partial: the sum of its
//! queries' overlap factors). Start with one tree per query; repeatedly
//! merge the pair whose merge lowers C the most; stop when none lowers it.
//! Only queries with the same compatibility key (in slidewise: the same
//! aggregation and argument column) may share a tree.
//!
//! Exactly the greedy of the paper, made fast for 10^6 queries:
//! * Queries with identical edge sets merge first: their merge gains exactly
//!   λ, the largest gain any merge can have (E_AB ≥ max(E_A, E_B)), so this
//!   is one valid order of greedy steps. Trees are then per distinct edge
//!   set (≤ a few thousand in the paper's workloads), not per query.
//! * Gains of untouched pairs never change (C is a sum over trees), so they
//!   sit in a max-heap; a merge only adds the new tree's pairs, and entries
//!   of merged-away trees are dropped when popped.
//! * A pair is evaluated only if its gain can be positive: with
//!   E_A ≥ E_B, gain ≤ λ − (E_A − E_B)·Ω_B. Trees are kept ordered by E, so
//!   the candidates are a window of that order.
//!
//! After the greedy, a cheap extra check (not in the paper): where one tree
//! for all of a key's queries is cheaper than the greedy's trees, use it, so
//! the plan is never worse than either "no sharing" or "one tree".

use std::cmp::Ordering;
use std::collections::{BTreeSet, BinaryHeap, HashMap};

use super::{bitset, composite, f1, f1_memo, fast, query_classes, reduce, Class, EdgeCount, Method, Slide};
use crate::{invalid, Result};

/// One query as the optimizer sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Acq {
    pub slide: Slide,
    /// Overlap factor: final-aggregation operations per partial this query
    /// causes (range / slide for a final aggregation over its partials).
    pub omega: f64,
    /// Queries share a tree only with queries of the same key.
    pub key: u64,
}

#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// λ: input rate (tuples per second, or 1 per tuple for count windows).
    pub lambda: f64,
    /// Units of the slides per second: E_i = scale · edges / composite
    /// (1 when slides are in seconds or λ is per tuple; 1e9 for ns slides).
    pub scale: f64,
    pub method: Method,
    /// Compare with one tree per key at the end (see the module docs).
    pub single_tree_check: bool,
}

impl Options {
    pub fn new(lambda: f64, method: Method) -> Options {
        Options { lambda, scale: 1.0, method, single_tree_check: true }
    }
}

#[derive(Clone, Debug)]
pub struct Tree {
    /// Query indices, ascending.
    pub members: Vec<usize>,
    pub key: u64,
    /// The tree's edges: reduced residue classes.
    pub classes: Vec<Class>,
    pub omega: f64,
    /// Edges per slide unit (edges / composite).
    pub density: f64,
    /// The LCM of the members' slides, when it fits 128 bits.
    pub composite: Option<u128>,
    /// The exact edges of one composite slide, when the method counts it.
    pub count: Option<EdgeCount>,
}

impl Tree {
    /// E_i·Ω_i of eq. 1 (without the λ of the tree).
    fn final_cost(&self, scale: f64) -> f64 {
        scale * self.density * self.omega
    }
}

#[derive(Clone, Debug)]
pub struct WeavePlan {
    pub trees: Vec<Tree>,
    /// Eq. 1 for this plan.
    pub cost: f64,
    /// Eq. 1 with one tree per query.
    pub no_share_cost: f64,
    pub merges: u64,
    /// Pair gains computed (each one an edge count of a union).
    pub evaluations: u64,
}

/// Edge density of a reduced class set by `method`, and its exact count
/// when the method gives one. All methods give the same f64 when they all
/// succeed (edges and composite are exact; one division).
pub fn density(classes: &[Class], method: Method) -> Result<(f64, Option<EdgeCount>)> {
    let c = match method {
        Method::BitSet => bitset::count(classes)?,
        Method::F1 => f1::count(classes)?,
        Method::F1Memo => f1_memo::count(classes)?,
        Method::Fast => match composite(classes) {
            Ok(l) if l < i128::MAX as u128 => fast::count(classes)?,
            _ => return Ok((fast::rate(classes)?, None)),
        },
    };
    Ok((c.rate(), Some(c)))
}

/// The edge classes of one query, in a canonical form: two residues half a
/// slide apart are one class of half the slide. Queries with equal
/// canonical classes have equal edge sets.
fn canonical(q: &Slide) -> Result<Vec<Class>> {
    let (a, b) = query_classes(q)?;
    Ok(match b {
        None => vec![a],
        Some(b) if a.slide % 2 == 0 && a.shift.abs_diff(b.shift) == a.slide / 2 => {
            vec![Class { slide: a.slide / 2, shift: a.shift % (a.slide / 2) }]
        }
        Some(b) => {
            let mut v = vec![a, b];
            v.sort_unstable();
            v
        }
    })
}

fn union(a: &[Class], b: &[Class]) -> Vec<Class> {
    let mut u = Vec::with_capacity(a.len() + b.len());
    u.extend_from_slice(a);
    u.extend_from_slice(b);
    reduce(&mut u);
    u
}

#[derive(PartialEq)]
struct Cand {
    gain: f64,
    a: usize,
    b: usize,
}
impl Eq for Cand {}
impl Ord for Cand {
    fn cmp(&self, o: &Self) -> Ordering {
        // Largest gain first; ties to the oldest pair (deterministic).
        self.gain.total_cmp(&o.gain).then_with(|| (o.a, o.b).cmp(&(self.a, self.b)))
    }
}
impl PartialOrd for Cand {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// Non-negative f64 as an order-preserving key.
fn ekey(e: f64) -> u64 {
    e.to_bits()
}

struct Greedy<'a> {
    opt: &'a Options,
    trees: Vec<Option<Tree>>,
    by_e: BTreeSet<(u64, usize)>,
    heap: BinaryHeap<Cand>,
    omega_min: f64,
    evaluations: u64,
}

impl Greedy<'_> {
    fn e(&self, t: &Tree) -> f64 {
        self.opt.scale * t.density
    }

    /// Gain of merging a and b if it can be positive.
    fn consider(&mut self, a: usize, b: usize) -> Result<()> {
        let (ta, tb) = (self.trees[a].as_ref().unwrap(), self.trees[b].as_ref().unwrap());
        let lam = self.opt.lambda;
        let (ea, eb) = (self.e(ta), self.e(tb));
        let bound = if ea >= eb { lam - (ea - eb) * tb.omega } else { lam - (eb - ea) * ta.omega };
        let (ca, cb) = (ta.final_cost(self.opt.scale), tb.final_cost(self.opt.scale));
        let tol = 1e-12 * (lam + ca + cb);
        if bound <= tol {
            return Ok(());
        }
        let u = union(&ta.classes, &tb.classes);
        let (d, _) = density(&u, self.opt.method)?;
        self.evaluations += 1;
        let gain = lam + ca + cb - self.opt.scale * d * (ta.omega + tb.omega);
        if gain > tol {
            self.heap.push(Cand { gain, a: a.min(b), b: a.max(b) });
        }
        Ok(())
    }

    fn run(&mut self) -> Result<u64> {
        let lam = self.opt.lambda;
        // All pairs, each once from its lower-E side.
        let order: Vec<(u64, usize)> = self.by_e.iter().copied().collect();
        for (i, &(ka, a)) in order.iter().enumerate() {
            let ta = self.trees[a].as_ref().unwrap();
            let hi = self.e(ta) + lam / ta.omega;
            for &(kb, b) in &order[i + 1..] {
                if f64::from_bits(kb) >= hi && kb != ka {
                    break;
                }
                self.consider(a, b)?;
            }
        }
        let mut merges = 0;
        while let Some(Cand { a, b, .. }) = self.heap.pop() {
            if self.trees[a].is_none() || self.trees[b].is_none() {
                continue;
            }
            let ta = self.trees[a].take().unwrap();
            let tb = self.trees[b].take().unwrap();
            self.by_e.remove(&(ekey(self.e(&ta)), a));
            self.by_e.remove(&(ekey(self.e(&tb)), b));
            let classes = union(&ta.classes, &tb.classes);
            let (density, count) = density(&classes, self.opt.method)?;
            let mut members = ta.members;
            members.extend(tb.members);
            members.sort_unstable();
            let composite = ta.composite.zip(tb.composite).and_then(|(x, y)| lcm_u128(x, y));
            let count = at_composite(count, composite);
            let t = Tree { members, key: ta.key, classes, omega: ta.omega + tb.omega, density, composite, count };
            let id = self.trees.len();
            let ec = self.e(&t);
            let hi = ec + lam / t.omega;
            let lo = ec - lam / self.omega_min;
            self.trees.push(Some(t));
            merges += 1;
            let lo_key = if lo <= 0.0 { 0 } else { ekey(lo) };
            let cands: Vec<usize> = self
                .by_e
                .range((lo_key, 0)..)
                .take_while(|&&(k, _)| f64::from_bits(k) <= hi)
                .map(|&(_, j)| j)
                .collect();
            for j in cands {
                self.consider(j, id)?;
            }
            self.by_e.insert((ekey(ec), id));
        }
        Ok(merges)
    }
}

/// Plan `acqs` with WeaveShare under eq. 1.
pub fn weaveshare(acqs: &[Acq], opt: &Options) -> Result<WeavePlan> {
    if acqs.is_empty() {
        return invalid!("a plan needs at least one query");
    }
    if !(opt.lambda.is_finite() && opt.lambda >= 0.0) {
        return invalid!("the input rate must be a finite number >= 0, got {}", opt.lambda);
    }
    if !(opt.scale.is_finite() && opt.scale > 0.0) {
        return invalid!("the slide-unit scale must be a finite number > 0, got {}", opt.scale);
    }
    // Identical edge sets first (gain λ each; only if λ > 0, else no merge
    // lowers the cost).
    let mut start: Vec<Tree> = Vec::new();
    let mut index: HashMap<(u64, Vec<Class>), usize> = HashMap::new();
    let mut no_share = 0.0;
    let mut rates: HashMap<Vec<Class>, (f64, Option<EdgeCount>)> = HashMap::new();
    for (i, q) in acqs.iter().enumerate() {
        if !(q.omega.is_finite() && q.omega > 0.0) {
            return invalid!("query {i}: the overlap factor must be a finite number > 0, got {}", q.omega);
        }
        let c = canonical(&q.slide)?;
        let (d, count) = match rates.get(&c) {
            Some(&r) => r,
            None => {
                let r = density(&c, opt.method)?;
                rates.insert(c.clone(), r);
                r
            }
        };
        no_share += opt.lambda + opt.scale * d * q.omega;
        let slot = if opt.lambda > 0.0 { index.get(&(q.key, c.clone())).copied() } else { None };
        match slot {
            Some(t) => {
                start[t].members.push(i);
                start[t].omega += q.omega;
            }
            None => {
                if opt.lambda > 0.0 {
                    index.insert((q.key, c.clone()), start.len());
                }
                let composite = Some(q.slide.slide as u128);
                let count = at_composite(count, composite);
                start.push(Tree { members: vec![i], key: q.key, classes: c, omega: q.omega, density: d, composite, count });
            }
        }
    }
    drop(index);
    let pre_merges = (acqs.len() - start.len()) as u64;
    // One greedy per key: the cost is a sum over trees of one key each.
    let mut by_key: HashMap<u64, Vec<Tree>> = HashMap::new();
    for t in start {
        by_key.entry(t.key).or_default().push(t);
    }
    let mut keys: Vec<u64> = by_key.keys().copied().collect();
    keys.sort_unstable();
    let mut out = Vec::new();
    let (mut merges, mut evaluations) = (pre_merges, 0);
    for k in keys {
        let trees = by_key.remove(&k).unwrap();
        let omega_min = trees.iter().map(|t| t.omega).fold(f64::INFINITY, f64::min);
        let by_e = trees.iter().enumerate().map(|(i, t)| (ekey(opt.scale * t.density), i)).collect();
        let mut g = Greedy {
            opt,
            trees: trees.into_iter().map(Some).collect(),
            by_e,
            heap: BinaryHeap::new(),
            omega_min,
            evaluations: 0,
        };
        merges += g.run()?;
        evaluations += g.evaluations;
        let mut kept: Vec<Tree> = g.trees.into_iter().flatten().collect();
        if opt.single_tree_check && kept.len() > 1 {
            if let Some(t) = single_tree(&kept, opt) {
                merges += kept.len() as u64 - 1;
                kept = vec![t];
            }
        }
        out.extend(kept);
    }
    out.sort_by_key(|t| t.members[0]);
    let cost = out.iter().map(|t| opt.lambda + t.final_cost(opt.scale)).sum();
    Ok(WeavePlan { trees: out, cost, no_share_cost: no_share, merges, evaluations })
}

/// One tree for all of `trees` if it is cheaper under eq. 1.
fn single_tree(trees: &[Tree], opt: &Options) -> Option<Tree> {
    let now: f64 = trees.iter().map(|t| opt.lambda + t.final_cost(opt.scale)).sum();
    let omega: f64 = trees.iter().map(|t| t.omega).sum();
    let dmax = trees.iter().map(|t| t.density).fold(0.0, f64::max);
    // E_all ≥ max E_i: skip without counting when even that loses.
    if opt.lambda + opt.scale * dmax * omega >= now {
        return None;
    }
    let mut classes: Vec<Class> = trees.iter().flat_map(|t| t.classes.iter().copied()).collect();
    reduce(&mut classes);
    let (density, count) = density(&classes, Method::Fast).ok()?;
    let cost = opt.lambda + opt.scale * density * omega;
    if cost < now - 1e-12 * now {
        let mut members: Vec<usize> = trees.iter().flat_map(|t| t.members.iter().copied()).collect();
        members.sort_unstable();
        let composite = trees.iter().try_fold(1u128, |l, t| t.composite.and_then(|c| lcm_u128(l, c)));
        let count = at_composite(count, composite);
        Some(Tree { members, key: trees[0].key, classes, omega, density, composite, count })
    } else {
        None
    }
}

/// Eq. 1 for a given partition (lists of query indices): for tests and for
/// comparing plans.
pub fn partition_cost(acqs: &[Acq], groups: &[Vec<usize>], opt: &Options) -> Result<f64> {
    let mut cost = 0.0;
    for g in groups {
        if g.is_empty() {
            return invalid!("a group of a plan cannot be empty");
        }
        let mut c = Vec::new();
        let mut omega = 0.0;
        for &i in g {
            if i >= acqs.len() {
                return invalid!("query index {i} out of range");
            }
            c.extend(canonical(&acqs[i].slide)?);
            omega += acqs[i].omega;
        }
        reduce(&mut c);
        let (d, _) = density(&c, opt.method)?;
        cost += opt.lambda + opt.scale * d * omega;
    }
    Ok(cost)
}

fn lcm_u128(a: u128, b: u128) -> Option<u128> {
    let (mut x, mut y) = (a, b);
    while y != 0 {
        (x, y) = (y, x % y);
    }
    (a / x).checked_mul(b)
}

/// The count of the reduced classes, over the members' composite slide.
fn at_composite(c: Option<EdgeCount>, composite: Option<u128>) -> Option<EdgeCount> {
    match (c, composite) {
        (Some(c), Some(l)) if l % c.composite == 0 => Some(c.over(l)),
        _ => None,
    }
}
