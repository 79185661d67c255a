"""The output directory: its one writer (``directory``) and the claim one sweep holds on it (``lock``)."""
