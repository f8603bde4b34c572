"""The named ops, in rooms by category: ``creation``, ``elementwise``, ``reduction``, ``manipulation``, ``indexing``,
``sorting`` and sets, ``fused`` paths; ``einsum``, ``methods`` (ShardArray's table of ops) and ``show`` (printing).

Every op runs on the ground floor, ``shardarray/core/`` (the tape, the block map, relayouts, dispatch plans).
"""
