//! Decoding that counts what it builds: the [`DecodeLimits`] of one body.
//!
//! serde_json's own `Value` has no budget, so a body of two-byte values decodes into a tree
//! some fifty times its size before anything can look at it. [`BoundedValue`] is the same
//! tree built by a visitor that charges one unit per value, and [`BoundedBatch`] stops at
//! the first message past the batch cap; either failure ends the parse at once.

use std::fmt;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::RpcError;

/// What decoding one body may build. A JSON value costs tens of bytes once decoded while
/// `{}` or `0,` costs two or three on the wire, so without a count a 4 MiB body of empty
/// objects becomes hundreds of megabytes before any check runs; both caps are applied while
/// the parser runs, and decoding stops at the first value past one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeLimits {
    /// Messages in a batch (`http.max_batch_size`).
    pub max_batch: usize,
    /// JSON values in the whole body, every nested one included (`http.max_json_values`).
    pub max_values: usize,
}

impl DecodeLimits {
    /// No caps, for input whose size the caller bounds otherwise.
    pub const UNBOUNDED: DecodeLimits = DecodeLimits {
        max_batch: usize::MAX,
        max_values: usize::MAX,
    };
}

/// Which of the [`DecodeLimits`] a body went past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeCap {
    BatchSize,
    Values,
}

/// Why a body was not decoded.
#[derive(Debug, Clone, PartialEq)]
pub enum DecodeError {
    /// Not JSON (-32700), or JSON that is no JSON-RPC message (-32600).
    Malformed(RpcError),
    /// Past one of the [`DecodeLimits`] (-32600); nothing of it was kept.
    OverCap(DecodeCap, RpcError),
}

impl DecodeError {
    pub fn into_rpc(self) -> RpcError {
        match self {
            DecodeError::Malformed(e) | DecodeError::OverCap(_, e) => e,
        }
    }
}

pub(super) fn over_cap(cap: DecodeCap, limits: DecodeLimits) -> DecodeError {
    let message = match cap {
        DecodeCap::BatchSize => format!(
            "a batch of more than {} messages is over http.max_batch_size; send fewer per POST",
            limits.max_batch
        ),
        DecodeCap::Values => format!(
            "the body holds more than {} JSON values (http.max_json_values); send smaller params, or large data as one string",
            limits.max_values
        ),
    };
    DecodeError::OverCap(cap, RpcError::invalid_request(message))
}

/// What one decode may still build. Decoding is synchronous and one body at a time per
/// thread, so a thread-local lets the derived `WireMessage` charge its values without a
/// seed threaded through every field; `decode_body_within` resets it before each body.
#[derive(Clone, Copy)]
struct Budget {
    max_batch: usize,
    values_left: usize,
    over: Option<DecodeCap>,
}

thread_local! {
    static BUDGET: std::cell::Cell<Budget> = const {
        std::cell::Cell::new(Budget { max_batch: usize::MAX, values_left: usize::MAX, over: None })
    };
}

/// Charges one value; an error (which makes serde_json stop at once) past the cap.
fn charge<E: serde::de::Error>() -> Result<(), E> {
    let mut budget = BUDGET.get();
    if budget.values_left == 0 {
        budget.over = Some(DecodeCap::Values);
        BUDGET.set(budget);
        return Err(E::custom("over http.max_json_values"));
    }
    budget.values_left -= 1;
    BUDGET.set(budget);
    Ok(())
}

/// A batch read element by element, refused at the first message past the cap.
pub(super) struct BoundedBatch<T>(pub(super) Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for BoundedBatch<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Elements<T>(usize, std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Elements<T> {
            type Value = Vec<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON-RPC batch")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let mut messages = Vec::new();
                while let Some(message) = seq.next_element::<T>()? {
                    if messages.len() == self.0 {
                        let mut budget = BUDGET.get();
                        budget.over = Some(DecodeCap::BatchSize);
                        BUDGET.set(budget);
                        return Err(serde::de::Error::custom("over http.max_batch_size"));
                    }
                    messages.push(message);
                }
                Ok(messages)
            }
        }
        d.deserialize_seq(Elements(BUDGET.get().max_batch, std::marker::PhantomData))
            .map(BoundedBatch)
    }
}

/// A `serde_json::Value` that charges the [`Budget`] for itself and every value inside it.
pub(super) struct BoundedValue(pub(super) Value);

impl<'de> Deserialize<'de> for BoundedValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValueVisitor).map(BoundedValue)
    }
}

struct ValueVisitor;

impl<'de> serde::de::Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Value, E> {
        charge().map(|()| Value::Bool(v))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Value, E> {
        charge().map(|()| Value::from(v))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Value, E> {
        charge().map(|()| Value::from(v))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        charge().map(|()| serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Value, E> {
        charge().map(|()| Value::String(v.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Value, E> {
        charge().map(|()| Value::String(v))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
        charge().map(|()| Value::Null)
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        charge()?;
        let mut items = Vec::new();
        while let Some(BoundedValue(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        charge()?;
        let mut members = Map::new();
        while let Some((key, BoundedValue(value))) = map.next_entry::<String, BoundedValue>()? {
            members.insert(key, value);
        }
        Ok(Value::Object(members))
    }
}

/// Resets this thread's budget before a body is decoded.
pub(super) fn start(limits: DecodeLimits) {
    BUDGET.set(Budget {
        max_batch: limits.max_batch,
        values_left: limits.max_values,
        over: None,
    });
}

/// The cap the last decode on this thread went past, if any.
pub(super) fn overrun() -> Option<DecodeCap> {
    BUDGET.get().over
}
