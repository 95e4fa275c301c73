//! A small, explicit binary codec for partial aggregates, used by checkpoints
//! (`pickle` of a Stream). Little-endian, no schema: the reader is always the
//! same monomorphised type as the writer, and a version byte guards the whole.

use crate::{Error, Result};

pub trait Codec: Sized {
    fn encode(&self, out: &mut Vec<u8>);
    fn decode(inp: &mut &[u8]) -> Result<Self>;
}

fn take<'a>(inp: &mut &'a [u8], n: usize) -> Result<&'a [u8]> {
    if inp.len() < n {
        return Err(Error::Corrupt("truncated checkpoint".into()));
    }
    let (a, b) = inp.split_at(n);
    *inp = b;
    Ok(a)
}

macro_rules! prim {
    ($($t:ty),*) => {$(
        impl Codec for $t {
            #[inline]
            fn encode(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            #[inline]
            fn decode(inp: &mut &[u8]) -> Result<Self> {
                let b = take(inp, std::mem::size_of::<$t>())?;
                Ok(<$t>::from_le_bytes(b.try_into().unwrap()))
            }
        }
    )*};
}
prim!(i32, i64, u32, u64, i128, u128, f32, f64);

impl Codec for bool {
    fn encode(&self, out: &mut Vec<u8>) {
        out.push(*self as u8)
    }
    fn decode(inp: &mut &[u8]) -> Result<Self> {
        Ok(take(inp, 1)?[0] != 0)
    }
}

impl Codec for usize {
    fn encode(&self, out: &mut Vec<u8>) {
        (*self as u64).encode(out)
    }
    fn decode(inp: &mut &[u8]) -> Result<Self> {
        Ok(u64::decode(inp)? as usize)
    }
}

impl<T: Codec> Codec for Option<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            None => out.push(0),
            Some(v) => {
                out.push(1);
                v.encode(out)
            }
        }
    }
    fn decode(inp: &mut &[u8]) -> Result<Self> {
        Ok(if bool::decode(inp)? { Some(T::decode(inp)?) } else { None })
    }
}

impl<T: Codec> Codec for Vec<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        self.len().encode(out);
        for v in self {
            v.encode(out);
        }
    }
    fn decode(inp: &mut &[u8]) -> Result<Self> {
        let n = usize::decode(inp)?;
        if n > inp.len() {
            return Err(Error::Corrupt("bad length".into()));
        }
        (0..n).map(|_| T::decode(inp)).collect()
    }
}

impl<A: Codec, B: Codec> Codec for (A, B) {
    fn encode(&self, out: &mut Vec<u8>) {
        self.0.encode(out);
        self.1.encode(out);
    }
    fn decode(inp: &mut &[u8]) -> Result<Self> {
        Ok((A::decode(inp)?, B::decode(inp)?))
    }
}

impl Codec for String {
    fn encode(&self, out: &mut Vec<u8>) {
        self.as_bytes().to_vec().encode(out)
    }
    fn decode(inp: &mut &[u8]) -> Result<Self> {
        String::from_utf8(Vec::<u8>::decode(inp)?).map_err(|_| Error::Corrupt("bad utf-8".into()))
    }
}

impl Codec for u8 {
    fn encode(&self, out: &mut Vec<u8>) {
        out.push(*self)
    }
    fn decode(inp: &mut &[u8]) -> Result<Self> {
        Ok(take(inp, 1)?[0])
    }
}

/// Implement [`Codec`] for a struct field by field.
#[macro_export]
macro_rules! codec_struct {
    ($t:ty { $($f:ident),* }) => {
        impl $crate::codec::Codec for $t {
            fn encode(&self, out: &mut Vec<u8>) {
                $( $crate::codec::Codec::encode(&self.$f, out); )*
            }
            fn decode(inp: &mut &[u8]) -> $crate::Result<Self> {
                Ok(Self { $( $f: $crate::codec::Codec::decode(inp)?, )* })
            }
        }
    };
}

