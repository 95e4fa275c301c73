//! STUB: to be replaced by the real algorithm.
crate::stub_algorithm!(SubtractOnEvictInner);
pub struct SubtractOnEvict<M: crate::Monoid>(SubtractOnEvictInner<M>);
impl<M: crate::Monoid> crate::fifo::New for SubtractOnEvict<M> {
    fn new_with_capacity(c: usize) -> crate::Result<Self> {
        if !M::INVERTIBLE {
            return Err(crate::Error::NotInvertible { algorithm: "soe", agg: M::NAME });
        }
        Ok(SubtractOnEvict(crate::fifo::New::new_with_capacity(c)?))
    }
}
impl<M: crate::Monoid> crate::fifo::FifoAggregator<M> for SubtractOnEvict<M> {
    fn insert(&mut self, v: M::Agg) { self.0.insert(v) }
    fn evict(&mut self) { self.0.evict() }
    fn query(&mut self) -> M::Agg { self.0.query() }
    fn query_last(&mut self, k: usize) -> M::Agg { self.0.query_last(k) }
    fn len(&self) -> usize { self.0.len() }
    fn contents(&self) -> Vec<M::Agg> { self.0.contents() }
}
