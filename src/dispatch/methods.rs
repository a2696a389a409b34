//! The method table: every method the server knows, which era serves it, who answers it,
//! and what the 2026-07-28 path must add to its result.
//!
//! Routing on both paths, the session actor's immediate answers, the cache hints and the
//! `input_required` check all read this one table, so adding a method is one line here
//! plus its handler.

/// Which protocol era serves a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// Handshake-era sessions only (2025-03-26, 2025-06-18, 2025-11-25).
    Session,
    /// The stateless 2026-07-28 revision only.
    Modern,
    /// Both.
    Both,
}

/// Who answers a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnsweredBy {
    /// The session actor itself, at once: it reads or changes session state.
    SessionActor,
    /// [`dispatch`](super::dispatch), in a spawned task, on either path.
    Features,
    /// The stateless path's own handler (discovery, listen streams, tasks).
    Stateless,
}

#[derive(Debug)]
pub struct MethodSpec {
    pub name: &'static str,
    pub era: Era,
    pub answered_by: AnsweredBy,
    /// May answer `input_required` on the 2026-07-28 path (spec `basic/patterns/mrtr.mdx`).
    pub may_need_input: bool,
    /// Its 2026-07-28 result carries cache hints (spec `server/utilities/caching.mdx`).
    pub cacheable: bool,
}

const fn method(name: &'static str, era: Era, answered_by: AnsweredBy) -> MethodSpec {
    MethodSpec {
        name,
        era,
        answered_by,
        may_need_input: false,
        cacheable: false,
    }
}

const fn cacheable(mut spec: MethodSpec) -> MethodSpec {
    spec.cacheable = true;
    spec
}

const fn may_need_input(mut spec: MethodSpec) -> MethodSpec {
    spec.may_need_input = true;
    spec
}

use crate::metrics::MethodLabel;
use AnsweredBy::{Features, SessionActor, Stateless};
use Era::{Both, Modern, Session};

/// The busiest methods come first: lookups scan the table.
pub static METHODS: &[MethodSpec] = &[
    may_need_input(method("tools/call", Both, Features)),
    method("ping", Session, SessionActor),
    cacheable(method("tools/list", Both, Features)),
    cacheable(may_need_input(method("resources/read", Both, Features))),
    may_need_input(method("prompts/get", Both, Features)),
    cacheable(method("resources/list", Both, Features)),
    cacheable(method("resources/templates/list", Both, Features)),
    cacheable(method("prompts/list", Both, Features)),
    method("completion/complete", Both, Features),
    method("initialize", Session, SessionActor),
    method("logging/setLevel", Session, SessionActor),
    method("resources/subscribe", Session, SessionActor),
    method("resources/unsubscribe", Session, SessionActor),
    cacheable(method("server/discover", Modern, Stateless)),
    method("subscriptions/listen", Modern, Stateless),
    // The tasks extension (SEP-2663). `tasks/list` and `tasks/result` of the handshake-era
    // experimental tasks do not exist any more: they get -32601 like any unknown method.
    method("tasks/get", Modern, Stateless),
    method("tasks/update", Modern, Stateless),
    method("tasks/cancel", Modern, Stateless),
];

/// The table entry of `name`, if the server knows the method in any era.
pub fn lookup(name: &str) -> Option<&'static MethodSpec> {
    METHODS.iter().find(|m| m.name == name)
}

impl MethodSpec {
    pub fn in_sessions(&self) -> bool {
        matches!(self.era, Era::Session | Era::Both)
    }

    pub fn in_modern(&self) -> bool {
        matches!(self.era, Era::Modern | Era::Both)
    }
}

/// The method names, in table order: the rows of the request metrics.
pub fn metric_names() -> impl Iterator<Item = &'static str> {
    METHODS.iter().map(|m| m.name)
}

/// The request metrics' row of `name` in the handshake era or in 2026-07-28 (`modern`):
/// `other` for a method that era does not serve, so a client cannot add series.
pub fn metric_label(name: &str, modern: bool) -> MethodLabel {
    METHODS
        .iter()
        .position(|m| {
            m.name == name
                && if modern {
                    m.in_modern()
                } else {
                    m.in_sessions()
                }
        })
        .map_or(MethodLabel::OTHER, MethodLabel::new)
}

/// Whether the session actor answers `name` itself, without spawning a handler.
pub fn answered_by_session_actor(name: &str) -> bool {
    lookup(name).is_some_and(|m| m.answered_by == AnsweredBy::SessionActor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        for (i, m) in METHODS.iter().enumerate() {
            assert!(
                METHODS[i + 1..].iter().all(|other| other.name != m.name),
                "{} twice",
                m.name
            );
        }
    }

    #[test]
    fn metric_labels_name_only_the_methods_an_era_serves() {
        assert_eq!(metric_label("tools/call", false), MethodLabel::new(0));
        assert_eq!(metric_label("tools/call", true), MethodLabel::new(0));
        assert_eq!(metric_label("ping", true), MethodLabel::OTHER);
        assert_eq!(metric_label("server/discover", false), MethodLabel::OTHER);
        assert_eq!(metric_label("no/such", false), MethodLabel::OTHER);
        assert_eq!(metric_names().count(), METHODS.len());
    }

    #[test]
    fn feature_methods_are_served_in_both_eras() {
        for m in METHODS.iter().filter(|m| m.answered_by == Features) {
            assert_eq!(m.era, Both, "{}", m.name);
        }
    }
}
