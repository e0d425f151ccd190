"""What draftgen produces: records, rejects and manifests on disk, written, read back and resumed."""
