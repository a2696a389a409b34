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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_follow_sep_986() {
        assert!(validate_tool_name("get_weather.v2-beta").is_ok());
        assert!(validate_tool_name("").is_err());
        assert!(validate_tool_name("has space").is_err());
        assert!(validate_tool_name("a,b").is_err());
        assert!(validate_tool_name(&"x".repeat(129)).is_err());
    }
}
