"""The node agent: collect -> store -> aggregate -> report; qos: detect -> plan -> act."""
