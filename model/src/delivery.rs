//! The delivery model (not written yet).
