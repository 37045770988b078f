// Owns the precompiled GoogleTest header that every test binary reuses.
