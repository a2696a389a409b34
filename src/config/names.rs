//! Names the configuration must recognise before any provider exists: the builtin tools a
//! `[[tools]] builtin = "..."` entry may pick, and the rule every tool name follows. They
//! live here, in the leaf `config` layer, so validating a file needs nothing from the
//! layers that later build and serve those tools; [`crate::providers::builtin`] and
//! [`crate::features::tools`] read them from here.

/// The builtin tools, as `builtin = "..."` names them.
pub const BUILTIN_TOOLS: &[&str] = &["echo", "sleep", "progress", "ask", "sample"];

/// Checks a tool name against the 2025-11-25 guidance (SEP-986): 1–128 characters from
/// `[A-Za-z0-9_.-]`.
pub fn validate_tool_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 128 {
        return Err("must be 1 to 128 characters long".into());
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
    {
        return Err(format!(
            "contains {c:?}; only A-Z, a-z, 0-9, '_', '.' and '-' are allowed"
        ));
    }
    Ok(())
}

/// The name of `known` nearest to `wanted`, when one is near enough to be a typo of it:
/// "did you mean `max_connections`?" helps more than a list of every key.
pub fn suggest<'a>(wanted: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (strsim::damerau_levenshtein(wanted, k), *k))
        .filter(|(distance, k)| *distance <= (k.len().max(wanted.len()) / 3).max(1))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_are_near_names_only() {
        let known = ["max_connections", "max_body_bytes", "idle_timeout"];
        assert_eq!(suggest("max_conections", &known), Some("max_connections"));
        assert_eq!(suggest("idle_timeuot", &known), Some("idle_timeout"));
        assert_eq!(suggest("colour", &known), None);
    }

    #[test]
    fn tool_names_follow_sep_986() {
        assert!(validate_tool_name("get_weather.v2-beta").is_ok());
        assert!(validate_tool_name("").is_err());
        assert!(validate_tool_name("has space").is_err());
        assert!(validate_tool_name("a,b").is_err());
        assert!(validate_tool_name(&"x".repeat(129)).is_err());
    }
}
