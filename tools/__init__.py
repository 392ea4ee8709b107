"""Research tools offered to the model. This package never imports `gateway`."""

from tools.base import Tool, ToolContext, ToolFailure, ToolInput
from tools.config import ToolsConfig
from tools.registry import ToolOutcome, ToolRegistry
from tools.toolset import Toolset, all_tools, open_toolset

__all__ = [
    "Tool",
    "ToolContext",
    "ToolFailure",
    "ToolInput",
    "ToolOutcome",
    "ToolRegistry",
    "ToolsConfig",
    "Toolset",
    "all_tools",
    "open_toolset",
]
