//! Where tools, resources and prompts come from. Providers build [`Tool`](crate::Tool)s and
//! friends from configuration; the feature layer serves them without knowing their origin.

pub mod builtin;
