"""A team's model code: imported from source bytes, hashed, compared with git."""
