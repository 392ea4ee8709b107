"""Claude on Google Cloud Vertex AI: streamRawPredict with Application Default Credentials."""
