"""The versioned RunRecord, its verdicts and its tidy exports: value objects and their file format,
as pyperf's _bench. May import plan/ and below; never builds a plan or measures."""
