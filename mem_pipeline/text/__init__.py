"""Text analysis, one concern a module: ``lexical`` (tokens, stems, sparse vectors), ``dates``
(dates a text names, "when" questions), ``phrases`` (concept phrases, names), ``voice`` (first
person as "the user", conflicting specifics)."""
