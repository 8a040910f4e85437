"""Memory health: what rots in memory and in prompts, measured, never changed here.

`lines` finds duplicates and contradiction candidates in lines of text (pure), `stability`
measures how much of a prompt repeats the previous one byte for byte and which section order
keeps the longest prefix (pure), `report` reads a project's files, blame, sessions and kept
prompts into one report, and `trends` draws its figures per day."""
