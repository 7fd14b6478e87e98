"""An inference engine for looped (recurrent-depth) Transformers."""
