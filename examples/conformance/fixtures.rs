//! Payloads shared by tools, resources and prompts, copied from the suite's reference server
//! so results compare equal to what the scenarios document.

/// A 1×1 PNG, base64-encoded.
pub const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// A minimal WAV file (one silent sample), base64-encoded.
pub const WAV_BASE64: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

pub const PNG_MIME: &str = "image/png";

/// `tools-call-audio` requires exactly this MIME type.
pub const WAV_MIME: &str = "audio/wav";
