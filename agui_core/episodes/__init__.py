"""Episodes: agents run through tasks with scripted humans, scored from the server's events.

The parts that need no network: the task file (:mod:`.tasks`), the scripted humans
(:mod:`.humans`), the scoring of one episode (:mod:`.scoring`) and the figures over many
(:mod:`.report`, :mod:`.plot`). The runner that drives a server is
:mod:`agui_core.app.episodes` (``agui episodes``).
"""

from agui_core.episodes.humans import (
    AnswerLate,
    AnswerTwice,
    ApproveAll,
    CancelAll,
    Decision,
    DenyTool,
    EditArgs,
    Hook,
    Human,
    Mixed,
    NeverAnswer,
    Situation,
    episode_rng,
    parse_human,
)
from agui_core.episodes.report import EpisodesReport, pass_hat_k, percentile, summarize
from agui_core.episodes.scoring import EpisodeLog, EpisodeScore, ToolCallSeen, score
from agui_core.episodes.tasks import Expectation, Task, TaskFileError, ToolPattern, load_tasks, read_tasks

__all__ = [
    "AnswerLate",
    "AnswerTwice",
    "ApproveAll",
    "CancelAll",
    "Decision",
    "DenyTool",
    "EditArgs",
    "EpisodeLog",
    "EpisodeScore",
    "EpisodesReport",
    "Expectation",
    "Hook",
    "Human",
    "Mixed",
    "NeverAnswer",
    "Situation",
    "Task",
    "TaskFileError",
    "ToolCallSeen",
    "ToolPattern",
    "episode_rng",
    "load_tasks",
    "parse_human",
    "pass_hat_k",
    "percentile",
    "read_tasks",
    "score",
    "summarize",
]
