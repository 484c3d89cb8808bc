# ruff: noqa: E501 - sentence pools are data; wrapping them would only hurt reading.
"""Generate bot/data/sample_papers.json, the bundled offline sample (run once, committed).

    python bot/data/make_sample.py

Deterministic (fixed seed). Dates are stored as offsets in hours before the moment the
sample is read, so the sample is always "recent". The RL for LLM Agents topic is shaped
to spike: 70 papers in the last four weeks against 29 in the four weeks before. Text is
assembled from hand-written, topic-specific sentence pools; no real abstract is copied.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

OUT = Path(__file__).with_name("sample_papers.json")
rng = random.Random(20260630)

FIRST = [
    "Wei",
    "Yi",
    "Anna",
    "Lukas",
    "Priya",
    "Mateo",
    "Sofía",
    "Hiroshi",
    "Chloé",
    "Oluwaseun",
    "Zoë",
    "Jürgen",
    "Ngozi",
    "Rafael",
    "Mei",
    "Ahmed",
    "Elif",
    "Søren",
    "Ana",
    "Dmitri",
    "Kavya",
    "José",
    "Hyun-woo",
    "Léa",
    "Tomás",
    "Ayşe",
    "Björn",
    "Fatima",
    "Xinyu",
    "Emre",
]
LAST = [
    "Zhang",
    "Chen",
    "Müller",
    "Patel",
    "García",
    "Tanaka",
    "Dubois",
    "Adeyemi",
    "Schäfer",
    "Okafor",
    "Fernández",
    "Li",
    "Hassan",
    "Yılmaz",
    "Nørgaard",
    "Silva",
    "Ivanov",
    "Reddy",
    "Martínez",
    "Kim",
    "Lefèvre",
    "Novák",
    "Çağatan",
    "Wang",
    "Nakamura",
    "Østergaard",
    "Liu",
    "Kowalski",
    "O'Brien",
    "Huang",
]
AFFILS = [
    "Tsinghua University",
    "Stanford University",
    "ETH Zürich",
    "University of Tokyo",
    "Carnegie Mellon University",
    "Mila - Québec AI Institute",
    "University of Oxford",
    "Peking University",
    "Max Planck Institute for Intelligent Systems",
    "KAIST",
    "University of Washington",
    "Shanghai Jiao Tong University",
    "Université Paris-Saclay",
    "Google DeepMind",
    "Microsoft Research",
    "Ant Group",
    "University of Lagos",
    "Boğaziçi University",
    "Technical University of Munich",
    "UC Berkeley",
]
ACRO = [
    "ECHO",
    "SEVA",
    "ATOD",
    "UCOB",
    "TRACE",
    "PRISM",
    "LOOM",
    "HALO",
    "CREST",
    "NOVA",
    "ORBIT",
    "SCOPE",
    "FLARE",
    "MIRA",
    "QUILL",
    "DELTA",
    "ARC",
    "SAGE",
    "VERA",
    "PILOT",
]
BENCH = [
    "ALFWorld",
    "WebShop",
    "SWE-Bench Verified",
    "Search-QA",
    "WebArena",
    "TextCraft",
    "GSM8K",
    "MATH-500",
    "HotpotQA",
    "ScienceWorld",
]

GENERIC_RESULTS = [
    "Experiments on {b1} and {b2} show that {m} improves the average success rate by {p} points over strong baselines.",
    "Across three model scales, {m} outperforms competitive methods while using {q}% fewer training tokens.",
    "On {b1}, {m} reaches {r}% accuracy, a gain of {p} points over the best prior method, and transfers to {b2} without retuning.",
    "Ablations confirm that each component contributes, and the gains are largest on the hardest instances.",
]
GENERIC_MIDDLE = [
    "Existing approaches either rely on hand-crafted heuristics or require expensive supervision that is rarely available in practice.",
    "A key observation behind our design is that most of the useful signal is concentrated in a small fraction of the decisions the model makes.",
    "We formalise this intuition, derive a practical estimator with bounded variance, and show that it recovers the optimal solution in a simplified setting.",
    "The approach is simple to implement, adds little overhead to standard training pipelines, and works with open-weight models of different sizes.",
    "We also construct a controlled benchmark that isolates the failure mode and makes progress on it measurable.",
    "Unlike prior work, our method needs no additional human annotation and no access to a stronger teacher at inference time.",
]
GENERIC_CLOSE = [
    "We release code, data and trained checkpoints to support further research.",
    "Our analysis offers practical guidance for practitioners and points to open problems.",
    "These results suggest a simple recipe that scales to larger models.",
    "We discuss limitations and directions for future work.",
]

# slug -> (share of background papers, categories, title templates, sentence pool)
T = {
    "rl-for-llm-agents": (
        0,
        ["cs.LG", "cs.CL", "cs.AI", "cs.MA"],
        [
            "{m}: Reinforcement Learning for Long-Horizon LLM Agents",
            "Turn-Level Credit for Multi-Turn Language Agents Trained with GRPO",
            "{m}: Learning Tool-Using Agents from Sparse Rewards",
            "Scaling Agentic Reinforcement Learning with Asynchronous Rollouts",
            "Stabilizing PPO for Web Agents with Trajectory-Level Baselines",
            "{m}: Self-Evolving Language Agents via Verifiable Rewards",
            "When Does RL Help LLM Agents? A Study of Exploration in Interactive Environments",
            "{m}: Curriculum Reinforcement Learning for Software Engineering Agents",
        ],
        [
            "Large language model agents must act over many turns, yet reinforcement learning with outcome rewards gives little signal about which actions mattered.",
            "Training LLM agents with reinforcement learning in interactive environments remains unstable when rewards are sparse and delayed.",
            "We propose {m}, a reinforcement learning framework that trains language agents with group-relative advantages (GRPO) computed at the level of individual turns.",
            "{m} replaces the value network of PPO with a learned turn-level baseline, which reduces variance for long-horizon agent trajectories.",
            "The agent receives verifiable rewards from the environment and a small shaping term that encourages information-seeking actions.",
            "We further introduce an asynchronous rollout scheduler so that slow environment steps do not stall policy updates.",
        ],
    ),
    "agentic-rl": (
        4,
        ["cs.LG", "cs.AI"],
        ["{m}: A Framework for Agentic RL at Scale", "Environment Design for Agentic RL"],
        [
            "Agentic RL trains models that plan, call tools and observe feedback within one loop.",
            "We study how environment design shapes what agentic RL can learn.",
            "{m} offers modular environments, reward functions and rollout workers for agentic RL.",
        ],
    ),
    "credit-assignment-in-rl": (
        4,
        ["cs.LG", "stat.ML"],
        [
            "Temporal Credit Assignment with Hindsight Return Decomposition",
            "{m}: Credit Assignment for Delayed Rewards",
        ],
        [
            "Credit assignment over long horizons is a central difficulty of sequential decision making.",
            "We propose {m}, which redistributes delayed returns to the steps that caused them.",
            "The method provides unbiased credit assignment under mild assumptions on the return decomposition.",
        ],
    ),
    "rl-post-training": (
        5,
        ["cs.LG", "cs.CL"],
        [
            "{m}: Stable RLVR Post-Training Beyond Math",
            "On Entropy Collapse in Post-Training with Verifiable Rewards",
        ],
        [
            "Post-training with verifiable rewards (RLVR) has become the standard route to stronger reasoning models.",
            "We show that entropy collapse during post-training limits exploration and propose {m} to counter it.",
            "{m} adapts the clipping range per token, preserving diversity without slowing convergence.",
        ],
    ),
    "process-reward-models": (
        4,
        ["cs.LG", "cs.CL"],
        [
            "{m}: Process Reward Models Without Human Step Labels",
            "Do Process Reward Models Generalize Across Domains?",
        ],
        [
            "Process reward models score every intermediate step of a solution rather than only its final answer.",
            "We train {m}, a step-level reward model, from automatically derived labels.",
            "Best-of-N selection with {m} outperforms outcome reward models at equal compute.",
        ],
    ),
    "on-policy-distillation": (
        3,
        ["cs.LG", "cs.CL"],
        [
            "{m}: On-Policy Distillation for Small Language Models",
            "Mode-Seeking On-Policy Distillation",
        ],
        [
            "On-policy distillation trains a student on its own samples under the guidance of a teacher.",
            "We analyse why forward-KL distillation averages over modes and propose {m}, a reverse-KL variant.",
            "{m} closes most of the gap to the teacher at a fraction of the inference cost.",
        ],
    ),
    "llm-agent-memory": (
        4,
        ["cs.CL", "cs.AI"],
        [
            "{m}: Bounded Memory for Long-Running Language Model Agents",
            "Forgetting on Purpose: Memory Updates for Conversational Agents",
        ],
        [
            "Language model agents that run for weeks need a memory that stays small and current.",
            "We present {m}, a memory module that decides what to store, update and forget.",
            "The memory is written in natural language, so a language model can inspect and edit it.",
        ],
    ),
    "llm-reasoning": (
        7,
        ["cs.CL", "cs.AI"],
        [
            "{m}: Adaptive Test-Time Compute for Mathematical Reasoning",
            "How Long Should Chain-of-Thought Be?",
        ],
        [
            "Chain-of-thought prompting improves mathematical reasoning but spends many tokens on easy problems.",
            "We propose {m}, which allocates test-time compute according to estimated difficulty.",
            "{m} stops generation early when successive partial answers agree.",
        ],
    ),
    "preference-optimization": (
        6,
        ["cs.LG", "cs.CL"],
        ["{m}: Robust Preference Optimization under Label Noise", "Length Bias in DPO, Revisited"],
        [
            "Direct preference optimization (DPO) aligns language models without a separate reward model.",
            "We show that noisy preference labels bias DPO towards longer responses and propose {m}.",
            "{m} reweights preference pairs by their estimated reliability.",
        ],
    ),
    "ai-alignment": (
        6,
        ["cs.AI", "cs.CL", "cs.CY"],
        [
            "{m}: Automated Red Teaming with Diverse Attacks",
            "Measuring Alignment Drift During Fine-Tuning",
        ],
        [
            "Fine-tuning can quietly erode the alignment of a safety-tuned model.",
            "We introduce {m}, an automated red teaming method that searches for diverse jailbreaks.",
            "{m} reveals failure modes that static benchmarks miss.",
        ],
    ),
    "mechanistic-interpretability": (
        6,
        ["cs.LG", "cs.AI"],
        [
            "Sparse Autoencoders Find Shared Features Across Model Families",
            "{m}: Tracing Circuits for Factual Recall",
        ],
        [
            "Mechanistic interpretability aims to explain model behaviour in terms of internal computations.",
            "We train sparse autoencoders on the residual stream and identify interpretable features.",
            "{m} locates the circuits that implement factual recall and verifies them by ablation.",
        ],
    ),
    "retrieval-augmented-generation": (
        7,
        ["cs.CL", "cs.IR"],
        ["{m}: Retrieval-Augmented Generation with Self-Checked Citations", "When Does RAG Hurt?"],
        [
            "Retrieval-augmented generation grounds answers in documents but fails when retrieval is noisy.",
            "We propose {m}, which checks each citation against the retrieved passage before answering.",
            "{m} reduces unsupported claims on open-domain question answering.",
        ],
    ),
    "diffusion-models": (
        8,
        ["cs.CV", "cs.LG"],
        [
            "{m}: Few-Step Diffusion via Consistency Distillation",
            "Score-Based Diffusion for High-Resolution Video",
        ],
        [
            "Diffusion models generate high-quality images but require many denoising steps.",
            "We introduce {m}, which distils a score-based diffusion model into a four-step sampler.",
            "{m} keeps sample quality while cutting denoising cost by an order of magnitude.",
        ],
    ),
    "vision-language-models": (
        8,
        ["cs.CV", "cs.CL"],
        [
            "{m}: Grounded Vision-Language Models for Charts",
            "Hallucination in Multimodal Large Language Models",
        ],
        [
            "Vision-language models describe images fluently but often hallucinate objects.",
            "We present {m}, a vision-language model trained with region-level grounding.",
            "{m} improves chart and document understanding at the same parameter count.",
        ],
    ),
    "mixture-of-experts": (
        6,
        ["cs.LG", "cs.CL"],
        [
            "{m}: Load-Balanced Mixture-of-Experts Without Auxiliary Losses",
            "Expert Specialization in Sparse MoE Language Models",
        ],
        [
            "Mixture-of-experts (MoE) layers scale model capacity at constant compute per token.",
            "We propose {m}, a routing rule that balances expert load without auxiliary losses.",
            "{m} improves perplexity and reduces dropped tokens during training.",
        ],
    ),
    "efficient-llm-inference": (
        7,
        ["cs.LG", "cs.CL", "cs.DC"],
        [
            "{m}: Speculative Decoding with Adaptive Draft Lengths",
            "KV Cache Quantization to Two Bits",
        ],
        [
            "Serving large models is bound by memory bandwidth and the size of the KV cache.",
            "We propose {m}, combining speculative decoding with adaptive draft lengths.",
            "{m} quantizes the KV cache to low precision with negligible quality loss.",
        ],
    ),
    "model-compression": (
        5,
        ["cs.LG", "cs.CV"],
        ["{m}: Structured Pruning of Vision Transformers", "Low-Rank Adapters as Compressors"],
        [
            "Compressing neural networks makes them deployable on edge devices.",
            "We propose {m}, a structured pruning method guided by second-order information.",
            "{m} combines pruning with knowledge distillation to recover accuracy.",
        ],
    ),
    "hyperparameter-transfer": (
        5,
        ["cs.LG", "stat.ML"],
        [
            "$\\mu$P for Mixture Models: Hyperparameter Transfer Across Width and Depth",
            "Scaling Laws for Learning-Rate Schedules",
        ],
        [
            "Tuning hyperparameters at scale is prohibitively expensive.",
            "We extend muP so that the optimal learning rate transfers across width and depth.",
            "We fit scaling laws that predict final loss from small runs with $O(N^{-0.3})$ error.",
        ],
    ),
    "graph-neural-networks": (
        6,
        ["cs.LG", "cs.SI"],
        [
            "{m}: Expressive Graph Neural Networks via Subgraph Sampling",
            "Oversquashing in GNNs, Measured",
        ],
        [
            "Graph neural networks struggle with long-range dependencies because of oversquashing.",
            "We propose {m}, a graph neural network that samples subgraphs to increase expressivity.",
            "{m} improves molecular property prediction and node classification.",
        ],
    ),
    "federated-learning": (
        5,
        ["cs.LG", "cs.CR"],
        [
            "{m}: Communication-Efficient Federated Learning with Differential Privacy",
            "Client Drift in Federated Fine-Tuning",
        ],
        [
            "Federated learning trains models on data that never leaves the clients.",
            "We present {m}, which compresses updates while keeping differential privacy guarantees.",
            "{m} reduces communication by {q}% with a small loss of accuracy.",
        ],
    ),
    "time-series-forecasting": (
        5,
        ["cs.LG", "stat.ML"],
        [
            "{m}: A Foundation Model for Time Series Forecasting",
            "Are Transformers Effective for Time Series? A Replication",
        ],
        [
            "Time series forecasting underpins energy, retail and climate applications.",
            "We pre-train {m} on a large corpus of time series and forecast zero-shot.",
            "{m} forecasts unseen series competitively with supervised baselines.",
        ],
    ),
    "robot-learning": (
        6,
        ["cs.RO", "cs.LG"],
        [
            "{m}: Vision-Language-Action Models for Dexterous Manipulation",
            "Sim-to-Real Locomotion from Video",
        ],
        [
            "Robots must generalise manipulation skills to new objects and scenes.",
            "We present {m}, a vision-language-action model for robot manipulation.",
            "{m} transfers locomotion policies from simulation to hardware without fine-tuning.",
        ],
    ),
}
LATEX_TITLES = [
    "$\\epsilon$-Greedy Exploration Is Enough for Tool-Using LLM Agents?",
    "{m}: $O(\\sqrt{{T}})$ Regret for Reinforcement Learning of Language Agents",
]
RL_QUERY = re.compile(r"reinforcement learning|\bGRPO\b|\bPPO\b", re.I)
AGENT = re.compile(r"\bagent", re.I)
# Four-week blocks, newest first: RL papers and background papers per block.
# Papers per four-week block (newest first): RL for LLM Agents, everything else. The
# overall volume stays flat while the topic grows, so its *share* rises: a real spike.
BLOCKS = [(70, 190), (29, 231), (22, 200)]


def fill(text: str, method: str) -> str:
    b1, b2 = rng.sample(BENCH, 2)
    return text.format(
        m=method,
        b1=b1,
        b2=b2,
        p=round(rng.uniform(1.5, 24.0), 1),
        q=rng.randint(12, 60),
        r=round(rng.uniform(55, 94), 1),
    )


def authors(rl: bool, with_yi: bool) -> list[dict[str, object]]:
    count = rng.choice([1, 2, 3, 3, 4, 4, 5, 6, 7, 9])
    people: list[dict[str, object]] = []
    for _ in range(count):
        name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        people.append({"name": name, "affiliations": rng.sample(AFFILS, rng.choice([1, 1, 1, 2]))})
    if with_yi:
        people.insert(
            rng.randint(0, len(people)), {"name": "Yi Wu", "affiliations": ["Tsinghua University"]}
        )
    return people


def abstract(slug: str, method: str) -> str:
    _, _, _, pool = T[slug]
    sentences = list(pool)
    if slug == "rl-for-llm-agents":
        flavour = rng.choice(
            [
                "agentic-rl",
                "credit-assignment-in-rl",
                "rl-post-training",
                "on-policy-distillation",
                "process-reward-models",
                "llm-agent-memory",
                None,
            ]
        )
        rng.shuffle(sentences)
        sentences = sentences[:4] + ([T[flavour][3][0]] if flavour else [])
    middle = rng.sample(GENERIC_MIDDLE, 3)
    sentences = sentences[:2] + middle[:2] + sentences[2:] + middle[2:]
    results = [fill(s, method) for s in rng.sample(GENERIC_RESULTS, 2)]
    text = " ".join([*sentences, *results, rng.choice(GENERIC_CLOSE)])
    return text.replace("{m}", method)


def make() -> list[dict[str, object]]:
    background = [s for s, v in T.items() for _ in range(v[0])]
    records: list[dict[str, object]] = []
    seq = 0
    yi_left = 9
    for block, (rl_count, other_count) in enumerate(BLOCKS):
        plan = ["rl-for-llm-agents"] * rl_count + [
            rng.choice(background) for _ in range(other_count)
        ]
        rng.shuffle(plan)
        for slug in plan:
            seq += 1
            _, cats, titles, _ = T[slug]
            method = rng.choice(ACRO) + (f"-{rng.randint(2, 9)}" if rng.random() < 0.2 else "")
            for _ in range(50):  # keep non-RL papers out of the RL topic's query
                text = abstract(slug, method)
                is_rl = bool(RL_QUERY.search(text) and AGENT.search(text))
                if is_rl == (slug == "rl-for-llm-agents"):
                    break
            else:
                raise SystemExit(f"could not write a {slug} abstract")
            title = rng.choice(
                LATEX_TITLES if slug == "rl-for-llm-agents" and rng.random() < 0.05 else titles
            )
            title = title.replace("{m}", method).replace("{{", "{").replace("}}", "}")
            primary = rng.choice(cats)
            categories = [primary] + [c for c in cats if c != primary and rng.random() < 0.45]
            with_yi = slug == "rl-for-llm-agents" and yi_left > 0 and rng.random() < 0.15
            yi_left -= with_yi
            offset = block * 28 * 24 + rng.uniform(2, 28 * 24 - 2)
            version = rng.choice([1] * 12 + [2, 2, 3])
            record = {
                "id": f"2606.{10000 + seq * 37 % 90000:05d}",
                "version": version,
                "title": title,
                "abstract": abstract_wrap(text),
                "authors": authors(slug == "rl-for-llm-agents", with_yi),
                "categories": categories,
                "offset_hours": round(offset, 2),
                "updated_offset_hours": round(max(0.5, offset - rng.uniform(24, 200)), 2)
                if version > 1
                else round(offset, 2),
                "comment": rng.choice(
                    [
                        "",
                        "",
                        "12 pages, 5 figures",
                        "Accepted at NeurIPS 2026",
                        "Code: github.com/example/repo",
                        "Preprint, under review",
                    ]
                ),
                "journal_ref": "Proc. ICML 2026" if rng.random() < 0.04 else "",
                "doi": f"10.48550/arXiv.2606.{10000 + seq * 37 % 90000:05d}"
                if rng.random() < 0.1
                else "",
            }
            records.append(record)
            if version > 1 and rng.random() < 0.3:
                # The stream also carries the first version, as a feed does: dedup keeps one.
                records.append(
                    {**record, "version": 1, "updated_offset_hours": record["offset_hours"]}
                )
    return records


def abstract_wrap(text: str) -> str:
    # Real feeds wrap abstracts at ~80 columns; ingest must collapse the line breaks.
    out, line = [], ""
    for word in text.split():
        if len(line) + len(word) > 78:
            out.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return "\n".join([*out, line])


if __name__ == "__main__":
    data = make()
    lines = ",\n".join(json.dumps(r, ensure_ascii=False) for r in data)
    OUT.write_text(f"[\n{lines}\n]\n", encoding="utf-8")
    print(f"wrote {len(data)} records to {OUT}")
