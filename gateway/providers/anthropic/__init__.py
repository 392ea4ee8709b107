"""The Messages API: request shaping, the stream translator, the transport, the model catalogue."""
