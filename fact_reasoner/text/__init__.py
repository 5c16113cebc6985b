"""The text room: helpers on plain text that several stages share (:mod:`.sentences`: where a
text's sentences begin and end, one named rule per need)."""
