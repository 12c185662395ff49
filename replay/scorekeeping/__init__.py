"""Scores: derived scores files, their check, the summarizer's olympic set score."""
